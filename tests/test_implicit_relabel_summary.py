"""Implicit negatives overturned by a later outcome are shown next to `corrections` (user tryout: with
`labels.implicit_negative_after: 1d`, two fraud outcomes arriving after maturity moved two predictions from negative
to positive, while replay's summary said 'corrections 0' and nothing else about it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from driftline.cli import main

from helpers import outcome, pred

T0 = 1_763_596_800.0  # 2026-11-20T00:00:00Z
DAY = 86400.0


@pytest.fixture
def files(tmp_path: Path) -> tuple[list[str], Path]:
    """--config/--db with a 1-day maturity, and a file of three outcomes arriving after five predictions matured."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("labels:\n  policy: implicit_negative_after\n  implicit_negative_after: 1d\n")
    preds = tmp_path / "p.jsonl"  # p0..p4 on day 0; q0..q4 on day 3 move the watermark past their maturity
    preds.write_bytes(b"\n".join([pred(f"p{i}", 0.3, T0 + 3600 * i) for i in range(5)]
                                 + [pred(f"q{i}", 0.3, T0 + 3 * DAY + 3600 * i) for i in range(5)]) + b"\n")
    outs = tmp_path / "o.jsonl"
    outs.write_bytes(b"\n".join([outcome("p0", 1, T0 + 3 * DAY + 6 * 3600), outcome("p1", 1, T0 + 3 * DAY + 6 * 3600),
                                 outcome("p2", 0, T0 + 3 * DAY + 6 * 3600)]) + b"\n")
    args = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert main([*args, "replay", "--json", str(preds)]) == 0
    return args, outs


def test_replay_json_counts_relabelled_implicit_negatives_beside_corrections(files, capsys) -> None:
    args, outs = files
    capsys.readouterr()
    assert main([*args, "replay", "--json", str(outs)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["corrections"] == 0
    assert (doc["implicit_relabelled_positive"], doc["implicit_relabelled_negative"]) == (2, 1)
    keys = list(doc)
    assert keys.index("implicit_relabelled_positive") == keys.index("corrections") + 1


def test_replay_terminal_names_the_overturned_implicit_negatives(files, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "220")
    args, outs = files
    capsys.readouterr()
    assert main([*args, "replay", str(outs)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"│ implicit negatives turned positive\s+│\s+2 │", out), out
    assert re.search(r"│ implicit negatives confirmed\s+│\s+1 │", out), out
    assert re.search(r"│ corrections \(explicit label changed\)\s+│\s+0 │", out), out
    assert "2 predictions counted as implicit negatives (no outcome within labels.implicit_negative_after) got a " \
           "positive outcome later: their counts moved from negative to positive (not counted as corrections)" \
           in " ".join(out.split())


def test_the_corrections_series_help_points_at_the_relabelled_implicit_negatives() -> None:
    """/metrics already exports driftline_implicit_negatives_relabelled_total; the corrections' help says to read
    it beside them, and names the config key that exists (it said labels.implicit_after)."""
    from driftline.exporter.names import LABEL_COUNTERS

    helps = {name: doc for name, _, doc in LABEL_COUNTERS}
    assert "driftline_implicit_negatives_relabelled_total" in helps["driftline_label_corrections"]
    assert "labels.implicit_negative_after" in helps["driftline_implicit_negatives"]
