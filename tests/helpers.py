"""Test helpers: build events and push them through the pure engine without a database."""

from __future__ import annotations

from typing import Any

import msgspec
import yaml

from driftline.core.engine import Engine, EngineSettings, JoinView
from driftline.core.events import Decoded, decode
from driftline.core.grids import score_bin
from driftline.core.stats import BucketStats, merge

_enc = msgspec.json.Encoder()


def pred(pid: str, score: float, ts: float, variant: str = "A", model: str = "fraud", **kw: Any) -> bytes:
    return _enc.encode({"type": "prediction", "prediction_id": pid, "model": model, "variant": variant,
                        "ts": float(ts), "score": float(score), **kw})


def outcome(pid: str, label: int, ts: float) -> bytes:
    return _enc.encode({"type": "outcome", "prediction_id": pid, "label": label, "ts": float(ts)})


def decoded(raws: list[bytes]) -> list[Decoded]:
    out = []
    for i, r in enumerate(raws):
        d = decode(r, "test", 0, i)
        assert isinstance(d, Decoded), d
        out.append(d)
    return out


class MemoryState:
    """The store's job done in memory: persistent join view and bucket totals across batches."""

    def __init__(self, settings: EngineSettings | None = None) -> None:
        self.settings = settings or EngineSettings()
        self.view = JoinView()
        self.buckets: dict[tuple, BucketStats] = {}
        self.counters: dict[tuple[str, str], int] = {}

    def apply(self, raws: list[bytes]) -> None:
        eng = Engine(self.settings, self.view)
        for d in decoded(raws):
            eng.apply(d)
        self._absorb(eng)

    def _absorb(self, eng: Engine) -> None:
        res = eng.finish()
        for k, delta in res.deltas.items():
            self.buckets.setdefault(k, BucketStats()).add(delta)
        for k, v in res.counters.items():
            self.counters[k] = self.counters.get(k, 0) + v

    def total(self) -> BucketStats:
        return merge(list(self.buckets.values()))


def make_stats(scores: Any, states: Any, threshold: float = 0.5) -> BucketStats:
    """BucketStats with one add_prediction per prediction (state NEG=0, POS=1, UNL=2)."""
    b = BucketStats()
    for state, s, sb in zip(states, scores, score_bin(scores)):
        b.add_prediction(int(state), bool(s >= threshold), int(sb), float(s))
    return b


def refuse_database_writes_of(monkeypatch: Any, prediction_id: str) -> None:
    """Make the store refuse (sqlalchemy DataError, as PostgreSQL does for a value a column cannot take) any batch
    that writes this prediction id."""
    from sqlalchemy.exc import DataError

    from driftline.storage import bulk

    original = bulk.write_predictions

    def refusing(conn: Any, dialect: str, records: Any, stored: Any = None) -> None:
        if any(r.prediction_id == prediction_id for r in records):
            raise DataError("INSERT INTO predictions ...", {}, ValueError(f"refused {prediction_id!r}"))
        original(conn, dialect, records, stored)

    monkeypatch.setattr(bulk, "write_predictions", refusing)
    copy_new = bulk.copy_new_join_rows  # PostgreSQL's batch path: both tables' new rows under one savepoint

    def refusing_copy(conn: Any, records: Any, outcomes: Any, stored: Any) -> Any:
        if any(r.prediction_id == prediction_id for r in records):
            raise DataError("COPY predictions ...", {}, ValueError(f"refused {prediction_id!r}"))
        return copy_new(conn, records, outcomes, stored)

    monkeypatch.setattr(bulk, "copy_new_join_rows", refusing_copy)


SEED000_SCORES = {  # score: (positives, negatives) — recall/FPR at 0.9, 0.7, 0.5, 0.3, 0.1 as in seed 000
    0.95: (36, 49), 0.75: (18, 98), 0.55: (18, 147), 0.35: (9, 441), 0.15: (9, 1225), 0.05: (0, 2450)}
"""Seed 000's labelled scores: recall 0.8 and FPR 294/4410 at the threshold 0.5."""


def seed000_events(start: float, model: str = "fraud") -> list[dict[str, Any]]:
    """Seed 000's 4,500 predictions (90 positives) one a minute from `start`, each with its outcome 10 min later."""
    events: list[dict[str, Any]] = []
    i = 0
    for score, (pos, neg) in SEED000_SCORES.items():
        for label, n in ((1, pos), (0, neg)):
            for _ in range(n):
                ts = start + (i % 6000) * 60.0
                events.append({"type": "prediction", "prediction_id": f"p{i}", "model": model, "ts": ts,
                               "score": score})
                events.append({"type": "outcome", "prediction_id": f"p{i}", "label": label, "ts": ts + 600})
                i += 1
    return events


def before_name_rule(mp: Any) -> None:
    """Decode as before names with a control character or surrounding whitespace were refused (name_rule.py):
    databases written then hold such names, and every reader (commands, the exporter) must still show them
    safely."""
    from driftline.core import decode_many as batch_decode
    from driftline import name_rule

    mp.setattr(name_rule, "bad_name", lambda _: False)
    mp.setattr(batch_decode, "bad_name", lambda _: False)


def replayed_db(tmp_path: Any, lines: list[bytes], capsys: Any) -> str:
    """The URL of a SQLite database (tmp_path/e.db) that `driftline replay` filled with these event lines (written
    to tmp_path/e.jsonl); the replay's output is read off capsys."""
    from driftline.cli import main

    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    url = f"sqlite:///{tmp_path / 'e.db'}"
    assert main(["--db", url, "replay", str(path), "--json"]) == 0
    capsys.readouterr()
    return url


def close_docs(a: object, b: object) -> bool:
    """Equal JSON documents, floats within 1e-12 relative (sums merged in another order differ in the last digits)."""
    import pytest

    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close_docs(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(close_docs, a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=1e-15)
    return a == b


def migrated_then(url: str, statement: str, **params: object) -> str:
    """Migrate the database at `url` to this version's heads, then run one SQL statement on it (e.g. a revision
    added or lost in alembic_version); the URL."""
    from sqlalchemy import create_engine, text

    from driftline.storage.store import Store

    store = Store(url)
    store.migrate()
    store.close()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(statement), params)
    engine.dispose()
    return url


def simulated_db(tmp_path: Any, end: str, days: int = 6, per_day: int = 300) -> list[str]:
    """`--db` arguments of a SQLite database (tmp_path/d.db) that `driftline replay` filled with `simulate`'s events
    (tmp_path/events.jsonl) of `days` days ending at `end`."""
    from driftline.cli import main

    events = tmp_path / "events.jsonl"
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert main([*db, "simulate", "--days", str(days), "--per-day", str(per_day), "--end", end, "--out",
                 str(events)]) == 0
    assert main([*db, "replay", str(events)]) == 0
    return db


def churn_with_reference(tmp_path: Any, lines: list[bytes], config: dict[str, Any] | None = None) -> list[str]:
    """Replay these predictions of model churn into a fresh SQLite database (under `config` when given, written to
    c.yaml) and set its drift reference over 2026-06-01..06-08 (the drift tests' first week); the CLI's `--config`
    and `--db` arguments for the commands that follow."""
    from driftline import cli

    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    base = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    if config is not None:
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
        base = ["--config", str(tmp_path / "c.yaml"), *base]
    assert cli.main([*base, "replay", str(path), "--json"]) == 0
    assert cli.main([*base, "reference", "set", "--model", "churn", "--from", "2026-06-01", "--to", "2026-06-08"]) == 0
    return base
