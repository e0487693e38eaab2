"""Statements and client-server round trips of one live-path batch on PostgreSQL (Pipeline.process_batch with
expected positions, as kafka/consumer.py stores a batch), counted on the wire by tests/pg_wire_count.py: a
deterministic measure of a batch's database cost (issue 18), where CPU seconds on a shared machine move ±30 %."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text

from driftline.config import from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage import labels
from driftline.storage.errors import StalePositions
from driftline.storage.store import Store
from driftline.storage.store_queries import StoreQueries

from helpers import outcome, pred
from pg_fixtures import create_database, drop_database
from pg_wire_count import Tally, WireCounter

T0 = 1_700_000_000.0
TABLES = ("SELECT name, label, value FROM counters WHERE name <> 'last_stored_us' ORDER BY 1, 2",
          "SELECT source, partition, next_offset FROM positions ORDER BY 1, 2",
          "SELECT model, kind, value FROM admitted_labels ORDER BY 1, 2, 3",
          "SELECT prediction_id, label, ts, shard, matched FROM outcomes ORDER BY 1",
          "SELECT prediction_id, model, variant, ts, score, label FROM predictions ORDER BY 1",
          "SELECT model, model_version, variant, bucket_start, shard, md5(data) FROM buckets ORDER BY 1, 2, 3, 4, 5")


@pytest.fixture
def counted_url(pg_database) -> Iterator[tuple[str, WireCounter]]:  # type: ignore[no-untyped-def]
    counter = WireCounter("127.0.0.1", 5432)
    try:
        yield (f"postgresql+psycopg://postgres@127.0.0.1:{counter.port}/{pg_database.name}?sslmode=disable",
               counter)
    finally:
        counter.close()


def _batches(features: bool = False, labels_only: bool = False) -> list[list[RawRecord]]:
    """A backlog batch of 300 records (predictions and outcomes on two partitions each), then trickle batches of
    three predictions and an outcome of an earlier one (the common live case); `features`: the predictions carry
    feature values; `labels_only`: then a batch of outcomes of stored predictions only (no new prediction)."""
    out: list[list[RawRecord]] = []
    offsets = {("kafka:p", 0): 0, ("kafka:p", 1): 0, ("kafka:o", 0): 0, ("kafka:o", 1): 0}

    def rec(kind: str, pid: str, payload: bytes) -> RawRecord:
        key = ("kafka:" + kind[0], int(pid[1:].replace("-", "")) % 2)
        offsets[key] += 1
        return RawRecord(key[0], key[1], offsets[key] - 1, payload, kind, pid.encode())

    kw = {"features": {"amount": 12.5, "country": "DE"}} if features else {}
    big = [rec("prediction", f"p{i}", pred(f"p{i}", (i % 10) / 10 + 0.05, T0 + i * 60, variant="AB"[i % 2], **kw))
           for i in range(200)]
    big += [rec("outcome", f"p{i}", outcome(f"p{i}", int(i % 7 == 0), T0 + i * 60 + 30)) for i in range(0, 200, 2)]
    out.append(big)
    for n in range(4):
        small = [rec("prediction", f"p{1000 + 3 * n + j}", pred(f"p{1000 + 3 * n + j}", 0.3, T0 + 200 * 60 + n,
                                                                **kw)) for j in range(3)]
        small.append(rec("outcome", f"p{2 * n + 1}", outcome(f"p{2 * n + 1}", 1, T0 + 200 * 60 + n + 1)))
        out.append(small)
    if labels_only:
        out.append([rec("outcome", f"p{i}", outcome(f"p{i}", 1, T0 + 300 * 60 + i)) for i in range(11, 31, 2)])
    return out


def _rows(store: Store) -> list[list[tuple]]:
    with store.read() as conn:
        return [[tuple(r) for r in conn.execute(text(q))] for q in TABLES]


def _run(url: str, counter: WireCounter, stale: bool = False, features: bool = False,
         labels_only: bool = False) -> tuple[list[Tally], list[list[tuple]]]:
    """Store the batches as the consumer does; `stale`: then a batch whose expected positions are behind the
    stored ones (another consumer moved them), which must raise StalePositions and write nothing."""
    store = Store(url, clock=lambda: T0 + 30 * 86400)
    store.migrate()
    pipe = Pipeline(from_dict({}), store)
    stored: dict[tuple[str, int], int] = {}
    tallies = []
    for batch in _batches(features, labels_only):
        expected: dict[tuple[str, int], int] = {}
        for r in batch:
            expected.setdefault((r.source, r.partition), stored.get((r.source, r.partition), 0))
        counter.reset()
        pipe.process_batch(batch, None, expected)
        tallies.append(counter.reset())
        for r in batch:
            stored[(r.source, r.partition)] = r.offset + 1
    rows = _rows(store)
    if stale:
        batch = _batches()[1]
        with pytest.raises(StalePositions):
            pipe.process_batch(batch, None, {(r.source, r.partition): 1 for r in batch})
        assert _rows(store) == rows
    store.close()
    return tallies, rows


def _trip_of(tally: Tally, start: str, within: str) -> int:
    """The round trip (counted from 0) that sends the statement starting with `start` and naming `within`."""
    return next(int(s.split("|")[0]) for s in tally.texts
                if s.split("| ", 1)[1].startswith(start) and within in s)


def test_a_batch_reads_its_watermark_and_admitted_labels_in_one_round_trip(counted_url, pg_database, monkeypatch):
    url, counter = counted_url
    tallies, rows = _run(url, counter)
    for tally in tallies:  # the backlog batch and each trickle batch
        assert _trip_of(tally, "SELECT max(", "counters") == _trip_of(tally, "SELECT ", "FROM admitted_labels")
    trickle = tallies[-1]
    assert (trickle.statements, trickle.round_trips) == (18, 16), trickle.texts
    assert not [s for t in tallies for s in t.texts if "RELEASE" in s]  # the COPY savepoint ends at COMMIT

    # the reads one statement each, as before: the same stored rows, one round trip more a batch
    def one_by_one(self, conn):  # type: ignore[no-untyped-def]
        return self.newest_event_in(conn), labels.load(conn)

    monkeypatch.setattr(StoreQueries, "batch_start_in", one_by_one)
    other = f"{pg_database.name}_b"
    create_database(other)
    try:
        before, rows_before = _run(url.replace(pg_database.name, other), counter)
    finally:
        drop_database(other)
    assert rows_before == rows
    assert [t.round_trips - 1 for t in before] == [t.round_trips for t in tallies]
    assert [t.statements for t in before] == [t.statements for t in tallies]


def test_a_batch_fences_its_positions_in_the_round_trip_of_its_first_bucket_read(counted_url):
    url, counter = counted_url
    tallies, _ = _run(url, counter, stale=True)  # a stale fence still raises before anything is written
    for tally in tallies:
        assert _trip_of(tally, "WITH e(source", "positions") == _trip_of(tally, "SELECT ", "FROM buckets b JOIN")
        assert _trip_of(tally, "INSERT INTO buckets", "") > _trip_of(tally, "WITH e(source", "")


def test_a_batch_with_new_predictions_moves_their_features_in_the_same_round_trips(counted_url, pg_database):
    """Feature histograms stored apart (bucket_features, 0013_featapart): a batch whose new predictions carry
    features sends exactly one statement more than the same batch without features, the feature read, in the
    pipeline of its bucket read (the feature upsert is a data-modifying WITH of the bucket upsert's statement), so
    its round trips stay as they were; a batch with no new prediction neither reads nor writes them."""
    url, counter = counted_url
    featured, _ = _run(url, counter, features=True, labels_only=True)
    other = f"{pg_database.name}_p"
    create_database(other)
    try:
        plain, _ = _run(url.replace(pg_database.name, other), counter, labels_only=True)
    finally:
        drop_database(other)
    *with_predictions, labels = featured
    assert [t.round_trips for t in featured] == [t.round_trips for t in plain]
    assert [t.statements for t in with_predictions] == [t.statements + 1 for t in plain[:-1]]
    for tally in with_predictions:
        assert _trip_of(tally, "SELECT ", "FROM bucket_features b JOIN") == _trip_of(tally, "SELECT ",
                                                                                     "FROM buckets b JOIN")
        assert _trip_of(tally, "WITH f AS (INSERT INTO bucket_features", "INSERT INTO buckets") > 0
    assert labels.statements == plain[-1].statements and not [s for s in labels.texts if "bucket_features" in s]
