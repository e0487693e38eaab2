"""What models the database holds (`driftline models list`): per model its admitted label values and when it was
admitted, its predictions and bucket range; and which new models are being refused (`model_limit` dead letters),
so an on-call sees a real model refused because junk names hold the slots."""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field

import msgspec
from sqlalchemy import Connection, select

from . import schema as t
from .store import Store
from ..core.encoded import encoded_counts
from ..core.labels import MODEL, VARIANT, VERSION, by_name

REFUSED_SCAN = 1000
"""Newest `model_limit` dead letters read to name the refused models (the all-time total is a counter)."""
_DETAIL = re.compile(r"^model ('.*?'|\".*?\") is new and ")


@dataclass(slots=True)
class ModelEntry:
    """One model: admitted (and when: None for one stored before the limits), its admitted variants and versions,
    and what its buckets hold (all time)."""

    model: str
    admitted: bool = False
    admitted_at: float | None = None
    variants: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    predictions: int = 0
    first_bucket: int | None = None
    last_bucket: int | None = None


@dataclass(frozen=True, slots=True)
class Inventory:
    """Every model stored or admitted, by name, and the refusals of new models."""

    models: list[ModelEntry]
    model_limit_dead_letters: int
    """All time (the counter behind driftline_dead_letters_total{reason="model_limit"})."""
    refused: dict[str, int]
    """Model → its dead letters among the newest REFUSED_SCAN `model_limit` ones, most first."""
    newest_refusal: float | None
    """When the newest `model_limit` dead letter was stored (None: none)."""

    @property
    def admitted(self) -> int:
        return sum(m.admitted for m in self.models)


def _entries(conn: Connection) -> dict[str, ModelEntry]:
    out: dict[str, ModelEntry] = {}
    a = t.admitted_labels.c
    for r in conn.execute(select(a.model, a.kind, a.value, a.admitted_at).order_by(a.model, a.kind, a.value)):
        e = out.setdefault(r.model, ModelEntry(r.model))
        if r.kind == MODEL:
            e.admitted, e.admitted_at = True, r.admitted_at
        elif r.kind == VARIANT:
            e.variants.append(r.value)
        elif r.kind == VERSION:
            e.versions.append(r.value)
    b = t.buckets.c
    for model, bucket_start, data in conn.execute(select(b.model, b.bucket_start, b.data)):  # by position (cheaper)
        e = out.setdefault(model, ModelEntry(model))
        e.predictions += encoded_counts(data)[0]
        start = int(bucket_start)
        e.first_bucket = start if e.first_bucket is None else min(e.first_bucket, start)
        e.last_bucket = start if e.last_bucket is None else max(e.last_bucket, start)
    return out


def refused_model(raw: bytes, detail: str) -> str:
    """The model a `model_limit` dead letter refused: from its event, else from its detail, else '?'."""
    try:
        doc = msgspec.json.decode(raw)
        if isinstance(doc, dict) and isinstance(doc.get("model"), str):
            return doc["model"]
    except msgspec.DecodeError:
        pass
    m = _DETAIL.match(detail)
    if m:
        try:
            return str(ast.literal_eval(m.group(1)))
        except (ValueError, SyntaxError):
            pass
    return "?"


def _refusals(conn: Connection) -> tuple[int, dict[str, int], float | None]:
    c = t.counters.c
    total = conn.execute(select(c.value).where(c.name == "dead_letters", c.label == "model_limit")
                         ).scalar_one_or_none()
    d = t.dead_letters.c
    rows = list(conn.execute(select(d.received_at, d.detail, d.raw).where(d.reason == "model_limit")
                             .order_by(d.id.desc()).limit(REFUSED_SCAN)))
    counts = Counter(refused_model(bytes(r.raw), r.detail) for r in rows)
    newest = float(rows[0].received_at) if rows else None
    return int(total or 0), dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))), newest


def inventory(store: Store) -> Inventory:
    """Every model with admitted labels or stored buckets, by name (`by_name`), and the refused new models (one
    read)."""
    with store.read() as conn:
        entries = _entries(conn)
        total, refused, newest = _refusals(conn)
    return Inventory([entries[m] for m in sorted(entries, key=by_name)], total, refused, newest)
