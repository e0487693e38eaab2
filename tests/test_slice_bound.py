"""Slice values are bounded per stored bucket (core/slice_bound.py; toxicity tryout: 5,000 distinct values in one
hour made a 2.9 MB database and nothing bounded them). At most MAX_SLICE_VALUES values of a feature keep their own
counts in a bucket, the rest are summed under OTHER; which ones must not depend on arrival order, batch split or
corrections, and every count must land where the prediction's first count did (no negative or lost counts)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from sqlalchemy import create_engine, text

from driftline.cli import main
from driftline.core import slice_bound
from driftline.core.slice_bound import OTHER, add_lists, bounded, value_hash

from helpers import outcome, pred

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z (one hour bucket holds the stream)
LIMIT = 7


def _table(values: list[str]) -> dict[str, list[int]]:
    return {v: [i + 1, 0, 0, 0, 0, 1] for i, v in enumerate(values)}


def test_bounded_keeps_the_values_with_the_smallest_hashes_and_sums_the_rest() -> None:
    values = [f"v{i}" for i in range(20)]
    table = _table(values)
    out = bounded(dict(table), add_lists, LIMIT)
    kept = sorted(values, key=lambda v: (value_hash(v), v))[:LIMIT]
    assert sorted(k for k in out if k != OTHER) == sorted(kept)
    assert out[OTHER] == [sum(table[v][0] for v in values if v not in kept), 0, 0, 0, 0, 20 - LIMIT]
    assert bounded(_table(values[:LIMIT]), add_lists, LIMIT) == _table(values[:LIMIT])  # within: unchanged


def test_folding_in_any_order_and_grouping_gives_one_table() -> None:
    """Values added one at a time, in batches, in any order (each step bounded, as each stored write is) end with
    the same table as all of them added and bounded once."""
    rng = random.Random(3)
    values = [f"lang-{i}" for i in range(60)]
    moves = [(v, [1, 0, 0, 0, 0, 0]) for v in values for _ in range(2)] + [(v, [-1, 1, 0, 0, 0, 0]) for v in values]
    once: dict[str, list[int]] = {}
    for v, c in moves:
        once[v] = add_lists(once.get(v, [0] * 6), c)
    once = bounded(once, add_lists, LIMIT)
    for trial in range(20):
        order = moves[:len(values) * 2]  # the predictions, in any order, before their label moves
        rng.shuffle(order)
        order += rng.sample(moves[len(values) * 2:], len(values))
        stored: dict[str, list[int]] = {}
        i = 0
        while i < len(order):
            step = rng.randint(1, 9)
            for v, c in order[i:i + step]:
                stored[v] = add_lists(stored.get(v, [0] * 6), c)
            stored = bounded(stored, add_lists, LIMIT)
            i += step
        assert stored == once, trial
        assert all(x >= 0 for c in stored.values() for x in c)


def _slices_rows(db: str) -> dict[str, Any]:
    """Every stored bucket's slices ("s"), by bucket start."""
    eng = create_engine(db)
    with eng.connect() as conn:
        rows = conn.execute(text("SELECT bucket_start, variant, data FROM buckets ORDER BY 1, 2")).all()
    eng.dispose()
    return {(r[0], r[1]): msgspec.msgpack.decode(r[2])["s"] for r in rows}


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slice_bound, "MAX_SLICE_VALUES", LIMIT)


def _events(n_values: int, seed: int) -> list[bytes]:
    """One hour: 3 predictions a value, their outcomes, and a correction of every third outcome, shuffled (an
    outcome before its prediction is held, as a replay does)."""
    rng = random.Random(seed)
    lines = []
    for i in range(n_values * 3):
        lang = f"lang-{i % n_values}"
        y = int(rng.random() < 0.4)
        lines.append(pred(f"p{i}", rng.random(), T0 + i, features={"lang": lang}))
        lines.append(outcome(f"p{i}", y, T0 + i + 30))
        if i % 3 == 0:
            lines.append(outcome(f"p{i}", 1 - y, T0 + i + 60))
    return lines


@pytest.mark.usefixtures("small_limit")
def test_replays_in_any_order_and_batch_size_store_one_bounded_state(tmp_path: Path, capsys) -> None:
    lines = _events(25, 5)
    (tmp_path / "c.yaml").write_text("slices: [lang]\n")
    stored = []
    for k, (seed, batch) in enumerate([(None, "30000"), (1, "7"), (2, "1"), (3, "50")]):
        shuffled = list(lines)
        if seed is not None:
            random.Random(seed).shuffle(shuffled)
        path = tmp_path / f"e{k}.jsonl"
        path.write_bytes(b"\n".join(shuffled) + b"\n")
        db = f"sqlite:///{tmp_path / f'd{k}.db'}"
        assert main(["--db", db, "--config", str(tmp_path / "c.yaml"), "replay", str(path), "--batch-size", batch,
                     "--json"]) == 0
        capsys.readouterr()
        stored.append(_slices_rows(db))
    for rows in stored[1:]:
        assert rows == stored[0]
    (hour,) = stored[0].values()
    lang = hour["lang"]
    assert len(lang) == LIMIT + 1 and OTHER in lang
    assert all(x >= 0 for c in lang.values() for x in c)
    assert sum(sum(c) for c in lang.values()) == 75  # every prediction counted once
    assert main(["--db", f"sqlite:///{tmp_path / 'd0.db'}", "--config", str(tmp_path / "c.yaml"), "slices",
                 "--at", "2026-01-02T00:00:00Z", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (feat,) = doc["features"]
    assert OTHER in {v["value"] for v in feat["values"]} and f"{OTHER} sums the values past the 7" in feat["note"]
    assert OTHER not in {w["value"] for w in doc["worst"]} and doc["ranked_values"] <= LIMIT


@pytest.mark.usefixtures("small_limit")
def test_postgresql_stores_the_bounded_state_sqlite_does(tmp_path: Path, capsys, pg_url: str) -> None:
    lines = _events(25, 8)
    (tmp_path / "c.yaml").write_text("slices: [lang]\n")
    stored = []
    for k, (db, seed, batch) in enumerate([(f"sqlite:///{tmp_path / 'd.db'}", None, "30000"), (pg_url, 4, "7")]):
        shuffled = list(lines)
        if seed is not None:
            random.Random(seed).shuffle(shuffled)
        path = tmp_path / f"e{k}.jsonl"
        path.write_bytes(b"\n".join(shuffled) + b"\n")
        assert main(["--db", db, "--config", str(tmp_path / "c.yaml"), "replay", str(path), "--batch-size", batch,
                     "--json"]) == 0
        capsys.readouterr()
        stored.append(_slices_rows(db))
    assert stored[1] == stored[0] and OTHER in next(iter(stored[0].values()))["lang"]
