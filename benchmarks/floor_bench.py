"""The floor under replay: the least work any design with a durable per-prediction join table in SQLite must do.

Per batch of 20 000 events it only decodes (msgspec, typed), looks the batch's ids up in the two join tables, inserts
the new prediction rows, upserts the outcome rows and writes labels into the matched prediction rows, in one
transaction, on driftline's own schema (so its indexes count) — no statistics, no buckets, no validation. Its rate,
as a ratio of raw msgspec decode measured in the same run, bounds what `driftline replay` can reach while join state
lives in per-prediction rows.

It also prints bounds that hold for any design in Python, as ratios of the same baseline: msgspec's typed decode
of the file into the event Structs (kept, as any consumer must), an idealised in-memory pass (that decode, event
times as epoch seconds, scores and the eight feature columns extracted, every outcome joined to its prediction by
a dict lookup: no validation, no statistics, no storage) and, when installed, what native JSON-lines readers
(pyarrow, polars) take to parse the file into columns.

Usage: python benchmarks/floor_bench.py [--per-day N] [--days D] [--workdir DIR]
"""

from __future__ import annotations

import io
import os
import sqlite3
import time
from collections.abc import Callable
from datetime import datetime

import msgspec

from driftline.core.events import Outcome, Prediction, _tagged_dec
from driftline.storage.store import Store
from bench_common import best_rate, raw_decode, simulated_stream

BATCH = 20_000


def decode_batch(lines: list[bytes]) -> tuple[list[Prediction], list[Outcome]]:
    """Typed decode of one batch, split into predictions and outcomes (the floor's first step, shared by
    join_store_floor.py)."""
    events = [_tagged_dec.decode(line) for line in lines]
    return [e for e in events if hasattr(e, "score")], [e for e in events if not hasattr(e, "score")]


def floor_batch(conn: sqlite3.Connection, lines: list[bytes]) -> None:
    """One batch of the floor workload on driftline's own join tables, in one transaction."""
    preds, outs = decode_batch(lines)
    ids = sorted({e.prediction_id for e in (*preds, *outs)})
    conn.execute("BEGIN")
    known: set[str] = set()
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        known.update(r[0] for r in conn.execute(
            f"SELECT prediction_id FROM predictions WHERE prediction_id IN ({marks})", chunk))
        conn.execute(f"SELECT prediction_id FROM outcomes WHERE prediction_id IN ({marks})", chunk).fetchall()
    conn.executemany(
        "INSERT INTO predictions (prediction_id, model, variant, model_version, ts, score, flagged, shard, label, "
        "label_ts, implicit, slice_values) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
        [(p.prediction_id, p.model, p.variant or "default", p.model_version or "unknown", _epoch(p.ts), p.score,
          p.score >= 0.5, 0, None, None, False, None) for p in preds])
    conn.executemany(
        "INSERT INTO outcomes (prediction_id, label, ts, shard, matched) VALUES (?,?,?,?,?) ON CONFLICT "
        "(prediction_id) DO UPDATE SET label = excluded.label, ts = excluded.ts",
        [(o.prediction_id, int(o.label), _epoch(o.ts), 0, True) for o in outs])
    conn.executemany("UPDATE predictions SET label = ?, label_ts = ? WHERE prediction_id = ?",
                     [(int(o.label), _epoch(o.ts), o.prediction_id) for o in outs])
    conn.execute("COMMIT")


def open_floor_db(db: str) -> sqlite3.Connection:
    """A connection in autocommit mode with the store's journal settings (WAL, synchronous=NORMAL)."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def floor_rate(lines: list[bytes], db: str) -> float:
    Store(f"sqlite:///{db}").migrate()
    conn = open_floor_db(db)
    t = time.perf_counter()
    for start in range(0, len(lines), BATCH):
        floor_batch(conn, lines[start:start + BATCH])
    rate = len(lines) / (time.perf_counter() - t)
    conn.close()
    return rate


def idealised_pass(buf: bytes) -> None:
    """The least any Python design does per event: typed decode, epoch times, score and feature columns, and
    the join of each outcome to its prediction (in a dict, nothing durable)."""
    events = _tagged_dec.decode_lines(buf)
    preds = [e for e in events if isinstance(e, Prediction)]
    outs = [e for e in events if not isinstance(e, Prediction)]
    _ = [_epoch(e.ts) for e in events]
    _ = [p.score for p in preds]
    index = {p.prediction_id: i for i, p in enumerate(preds)}
    _ = [index.get(o.prediction_id, -1) for o in outs]
    for name in preds[0].features or {}:
        _ = [(p.features or {}).get(name) for p in preds]


def native_readers(buf: bytes) -> dict[str, Callable[[], object]]:
    """Native JSON-lines → columns readers that are installed (none is a driftline dependency)."""
    out: dict[str, Callable[[], object]] = {}
    try:
        import pyarrow.json as pj

        out["pyarrow.json.read_json (all cores)"] = lambda: pj.read_json(io.BytesIO(buf))
    except ImportError:
        pass
    try:
        import polars as pl

        out["polars.read_ndjson (all cores)"] = lambda: pl.read_ndjson(io.BytesIO(buf))
    except ImportError:
        pass
    return out


def _epoch(ts: object) -> float:
    return ts.timestamp() if isinstance(ts, datetime) else float(ts)  # type: ignore[arg-type]


def main() -> None:
    work, path = simulated_stream(1800)
    with open(path, "rb") as fh:
        buf = fh.read()
    lines = buf.splitlines()
    n = len(lines)
    dec = msgspec.json.Decoder()
    raw = best_rate(n, lambda: raw_decode(lines, dec))
    figures = {"typed decode, events kept": best_rate(n, lambda: _tagged_dec.decode_lines(buf)),
               "idealised in-memory pass": best_rate(n, lambda: idealised_pass(buf))}
    figures.update({name: best_rate(n, read) for name, read in native_readers(buf).items()})
    figures["join-row floor into SQLite"] = floor_rate(lines, os.path.join(work, "floor.db"))
    print(f"events                               {n:,}")
    print(f"raw msgspec decode                   {raw:,.0f} events/s (baseline)")
    for name, rate in figures.items():
        print(f"{name:<36} {rate:,.0f} events/s  ratio {rate / raw:.3f} of raw decode")


if __name__ == "__main__":
    main()
