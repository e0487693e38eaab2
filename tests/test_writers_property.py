"""Property: several writers whose batches interleave on one database end in the state of a sequential run.

Each writer is a thread with its own Pipeline and Store (its own connections) on one SQLite file; every round
all writers start their next batch at once (a barrier), so reads and writes of their transactions overlap.
Hypothesis chooses the events (a small id pool: predictions and outcomes of one id land in different writers,
duplicates and corrections included), how they are split between writers and the batch sizes.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.config import Config
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage.store import Store
from helpers import outcome, pred
from sqlite_fixtures import migrated_copy

T0 = 1_790_000_000.0
ORDER_FREE = {("events", "prediction"), ("events", "outcome"), ("duplicates", "prediction")}
"""Counters that do not depend on arrival order (corrections and stale outcomes do, by design)."""


def _event(kind: str, n: int, label: int, dt: int) -> bytes:
    pid = f"p{n}"
    if kind == "p":  # one score and time per id: duplicated predictions are identical copies
        return pred(pid, score=(n * 37 % 100) / 100, ts=T0 + 600 * n, variant="AB"[n % 2])
    return outcome(pid, label, T0 + 600 * n + 3600 * (1 + dt))


events = st.lists(st.tuples(st.sampled_from("po"), st.integers(0, 30), st.integers(0, 1), st.integers(0, 5)),
                  min_size=1, max_size=120)


def state(url: str) -> dict[str, object]:
    """Buckets (integer cells exactly, float sums to 1e-9), order-free counters, join rows, pending outcomes."""
    store = Store(url)
    try:
        buckets = {}
        for r in store.buckets(None, 0, 2 ** 40):
            s = r.stats
            buckets[(r.model, r.model_version, r.variant, r.bucket_start, r.shard)] = (
                s.conf.tolist(), s.hist.tolist(), s.delay.tolist(), np.round(s.sums, 9).tolist())
        counters = {k: v for k, v in store.counters().items() if k in ORDER_FREE}
        return {"buckets": buckets, "counters": counters, "pending": store.pending_outcomes(),
                "join": store.join_size()}
    finally:
        store.close()


def run_writers(url: str, parts: list[list[bytes]], batch: int) -> None:
    """One thread per part, each with its own store; batches start together round by round."""
    rounds = max((len(p) + batch - 1) // batch for p in parts)
    barrier = threading.Barrier(len(parts))
    errors: list[BaseException] = []

    def writer(i: int, lines: list[bytes]) -> None:
        store = Store(url)
        pipeline = Pipeline(Config(), store, clock=lambda: T0 + 400 * 86400)
        try:
            for r in range(rounds):
                chunk = lines[r * batch:(r + 1) * batch]
                barrier.wait(timeout=60)
                if chunk:
                    pipeline.process_batch([RawRecord(f"writer-{i}", 0, r * batch + j, line)
                                            for j, line in enumerate(chunk)])
        except BaseException as err:  # noqa: BLE001 - reported by the test
            errors.append(err)
            barrier.abort()
        finally:
            store.close()

    threads = [threading.Thread(target=writer, args=(i, p)) for i, p in enumerate(parts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(evs=events, writers=st.integers(2, 4), assign=st.randoms(use_true_random=False),
       batch=st.integers(1, 8))
def test_interleaved_writers_equal_sequential(tmp_path: Path, migrated_sqlite: Path,
                                              evs: list[tuple[str, int, int, int]], writers: int,
                                              assign: object, batch: int) -> None:
    lines = [_event(*e) for e in evs]
    parts: list[list[bytes]] = [[] for _ in range(writers)]
    for line in lines:
        parts[assign.randrange(writers)].append(line)  # type: ignore[attr-defined]
    case = Path(tempfile.mkdtemp(dir=tmp_path))  # one directory per example (hypothesis reruns examples)
    seq, conc = f"sqlite:///{case / 'seq.db'}", f"sqlite:///{case / 'conc.db'}"
    for name in ("seq.db", "conc.db"):  # migrated: copies of the session's migrated file (migrate() runs on each)
        migrated_copy(migrated_sqlite, case / name).close()
    run_writers(seq, [lines], batch)
    run_writers(conc, parts, batch)
    assert state(conc) == state(seq)
