"""Produce one weekly report: assemble the document, draw the plots, render HTML/Markdown/JSON, write the files
report-<model>-<week>.{html,md,json} and store the report in the database (unique per model and ISO week).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Config
from ..storage.store import Store
from . import table
from .data import report_document
from .plots import all_plots
from .render import render_html, render_json, render_markdown
from .weeks import IsoWeek

EXTENSIONS = ("html", "md", "json")


@dataclass(frozen=True)
class ReportResult:
    """What one report run produced: the files written, whether the database row was written, the document."""

    model: str
    week: str
    paths: dict[str, Path]
    stored: bool
    provisional: bool
    doc: dict[str, Any] = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "week": self.week, "paths": {k: str(v) for k, v in self.paths.items()},
                "stored": self.stored, "provisional": self.provisional}


def file_stem(model: str, week: str) -> str:
    """'report-fraud-2026-W48'. Characters other than letters, digits, '.', '_' and '-' become '_', and a name so
    changed also gets the first 8 hex digits of its SHA-256 ('report-a_b-1f2e3d4c-2026-W48'): models 'a/b', 'a:b'
    and 'a_b' wrote one file, each report replacing another model's (final tryout)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", model).strip(".") or "model"
    if safe != model:
        safe = f"{safe}-{hashlib.sha256(model.encode()).hexdigest()[:8]}"
    return f"report-{safe}-{week}"


def _write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a reader never sees half a report. The file is created with mode
    0666 less the process umask, as any file the user writes (tempfile.mkstemp makes 0600: reports were unreadable
    to the web server or teammates not running as the service user, on-call tryout)."""
    tmp = str(path.parent / f"{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def generate(store: Store, config: Config, model: str, week: IsoWeek, now: float, out_dir: str | os.PathLike[str],
             *, replace: bool = True, source: str = "cli", week_reason: str = "given") -> ReportResult:
    """Build, render, write and store the report of `model` for `week`.

    replace=True (the CLI) overwrites a stored report of the same week; replace=False (the scheduler) keeps an
    existing one, and then writes no files either (stored=False).
    """
    doc = report_document(store, config, model, week, now, week_reason)
    html = render_html(doc, all_plots(doc))
    md = render_markdown(doc)
    js = render_json(doc)
    stored = table.save(store, table.StoredReport(model, week.label, week.start, week.end, now,
                                                  bool(doc["provisional"]), source, js, html, md), replace=replace)
    out = Path(out_dir)
    paths: dict[str, Path] = {}
    if stored or replace:
        out.mkdir(parents=True, exist_ok=True)
        stem = file_stem(model, week.label)
        for ext, text in zip(EXTENSIONS, (html, md, js)):
            path = out / f"{stem}.{ext}"
            _write_atomic(path, text)
            paths[ext] = path
    return ReportResult(model, week.label, paths, stored, bool(doc["provisional"]), doc)
