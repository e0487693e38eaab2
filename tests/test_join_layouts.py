"""benchmarks/join_layouts.py's join-store layouts against a dict reference, with their real 63-bit hash and with one
that makes most ids collide (so the overflow tables, their lookups and their promotion at expiry carry real rows):
a layout's measured rate only means something if it does the floor workload right."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from floor_bench import open_floor_db  # noqa: E402
from join_layouts import DAY, HashRows, MemIndex, MergedRows, Segments, hash63  # noqa: E402

T0 = 1_790_000_000.0
IDS = [f"id-{i}" + "x" * (i % 4 * 7) for i in range(20)]  # lengths over 1 to 4 words: batches pad differently


def colliding(ids: list[str]) -> list[int]:
    """Three hash values for all ids."""
    return [sum(map(ord, i)) % 3 for i in ids]


def line(kind: str, pid: str, ts: float, label: int = 0) -> bytes:
    """One JSON event line, as the simulated stream writes them."""
    when = datetime.fromtimestamp(ts, timezone.utc).isoformat().replace("+00:00", "Z")
    event = ({"type": "prediction", "prediction_id": pid, "model": "m", "ts": when, "score": 0.25 + label / 2}
             if kind == "p" else {"type": "outcome", "prediction_id": pid, "label": label, "ts": when})
    return msgspec.json.encode(event)


batches_st = st.lists(st.lists(st.tuples(st.sampled_from("po"), st.sampled_from(IDS), st.integers(0, 1)),
                               max_size=30), min_size=1, max_size=5)


@pytest.mark.parametrize("hasher", [hash63, colliding], ids=["hash63", "colliding"])
@pytest.mark.parametrize("layout", [HashRows, Segments, MergedRows, MemIndex])
@settings(max_examples=40, deadline=None)
@given(batches=batches_st, expire_at=st.integers(0, 5))
def test_layout_matches_reference(layout: type, hasher, batches: list, expire_at: int) -> None:
    lay = layout()
    lay.hasher = hasher
    conn = open_floor_db(":memory:")
    lay.create(conn, ":memory:")
    first: dict[str, float] = {}  # the reference: first prediction time per id, and ids with an outcome
    labelled: set[str] = set()
    for k, batch in enumerate(batches):
        ts = T0 + k * DAY
        preds = [pid for kind, pid, _ in batch if kind == "p"]
        for pid in preds:
            first.setdefault(pid, ts)
        outs = [(pid, label) for kind, pid, label in batch if kind == "o" and pid in first]  # no outcome first
        labelled.update(pid for pid, _ in outs)
        lay.batch(conn, [line("p", pid, ts + 1) for pid in preds] + [line("o", pid, ts + 2, lab) for pid, lab in outs])
    assert lay.counts(conn) == (len(first), len(labelled & first.keys()))
    assert lay.lookup(conn, IDS) == len(first)
    cutoff = T0 + expire_at * DAY
    conn.execute("BEGIN")
    lay.expire(conn, cutoff)
    conn.execute("COMMIT")
    live = {pid for pid, ts in first.items() if ts >= cutoff}
    assert lay.counts(conn) == (len(live), len(labelled & live))
    assert lay.lookup(conn, IDS) == len(live)


def test_hash63_is_stable_and_63_bit() -> None:
    hs = hash63(["tx-1", "tx-2", "a" * 200, ""])
    assert hs[0] != hs[1] and all(0 <= h < 2 ** 63 for h in hs)
    assert hs == hash63(["tx-1", "tx-2", "a" * 200, ""])
    assert hash63(["tx-1"]) == hash63(["tx-1", "b" * 40])[:1]  # independent of the other ids' lengths
