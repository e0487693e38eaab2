"""One bucket row an hour whatever the partition (core.engine.BUCKET_SHARD, migration 0014_onerow): records of
several partitions stored as `run` stores them give the bucket rows and readouts of the same records read from one
partition (counts exactly, float sums to rounding); the join rows keep their partitions and the exact ranking still
finds every held prediction on them; the migration merges a store written one row per partition into one row an hour
(merged in shard order, features included, compacted days and undecodable rows left alone), on SQLite and PostgreSQL,
with the readouts unchanged to rounding."""

from __future__ import annotations

import importlib.util
import json
import math
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from driftline.cli import main
from driftline.config import Config
from driftline.core import batch_columns, engine
from driftline.core.stats import BucketStats
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.readouts.ranking import held_pairs
from driftline.readouts.windows import Window, merged, window_rows
from driftline.storage import revisions
from driftline.storage.store import Store

CLOCK = 1_796_000_000.0
Key = tuple[str, str, str, int, int]


class _Id(msgspec.Struct):
    prediction_id: str
    type: str


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    path = tmp_path_factory.mktemp("sim") / "ev.jsonl"
    assert main(["simulate", "--days", "8", "--per-day", "600", "--seed", "11", "--end", "2026-11-30T00:00:00Z",
                 "--out", str(path)]) == 0
    return path.read_bytes().splitlines()


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'parts.db'}"
    return request.getfixturevalue("pg_url")


def _batches(lines: list[bytes], partitions: int, batch: int = 900) -> list[list[RawRecord]]:
    """The lines as `run` reads Kafka records: each on partition crc32(id) mod P of its topic, except that every
    fifth outcome comes on another partition than its prediction (a producer keying outcomes otherwise)."""
    decode = msgspec.json.Decoder(_Id).decode
    offsets: dict[tuple[str, int], int] = {}
    records: list[RawRecord] = []
    for i, line in enumerate(lines):
        ev = decode(line)
        part = (zlib.crc32(ev.prediction_id.encode()) + (i % 5 == 0 and ev.type == "outcome")) % partitions
        key = ("predictions" if ev.type == "prediction" else "outcomes", part)
        offsets[key] = offsets.get(key, -1) + 1
        records.append(RawRecord(key[0], part, offsets[key], line))
    return [records[i:i + batch] for i in range(0, len(records), batch)]


def _store(url: str, lines: list[bytes], partitions: int) -> Store:
    """The lines stored through the pipeline as `run` stores the records of `partitions` partitions."""
    store = Store(url, clock=lambda: CLOCK)
    store.migrate()
    pipeline = Pipeline(Config(), store, clock=lambda: CLOCK)
    for records in _batches(lines, partitions):
        pipeline.process_batch(records)
    return store


def _buckets(store: Store) -> dict[Key, BucketStats]:
    return {(r.model, r.model_version, r.variant, r.bucket_start, r.shard): r.stats
            for r in store.buckets(None, 0, 2 ** 40)}


def _same_stats(a: BucketStats, b: BucketStats) -> None:
    """Counts exactly, float sums to rounding."""
    for name in ("conf", "hist", "delay"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.allclose(a.psum, b.psum, rtol=1e-12, atol=1e-12) and np.allclose(a.sums, b.sums, rtol=1e-12)
    assert (a.expired, a.implicit) == (b.expired, b.implicit)


def _close(a: Any, b: Any, path: str = "") -> None:
    """Two readout documents equal, floats to rounding (a difference of near-equal sums to 1e-14 absolute)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-14) or (math.isnan(a) and math.isnan(b)), (path, a, b)
    else:
        assert a == b, (path, a, b)


def _readouts(url: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    out = {}
    for cmd in ("metrics", "calibration", "ab"):
        capsys.readouterr()
        assert main(["--db", url, cmd, "--json", "--model", "fraud", "--at", "2026-11-30T00:00:00Z"]) == 0
        out[cmd] = json.loads(capsys.readouterr().out)
    return out


def test_partitions_share_one_row_an_hour(url, lines, tmp_path, capsys):
    """Three partitions store the rows one partition stores (shard 0), the join rows keep their partitions, and
    the readouts equal; before, each partition had its own row an hour and a window read three times the rows."""
    one = _store(f"sqlite:///{tmp_path / 'one.db'}", lines, 1)
    three = _store(url, lines, 3)
    rows1, rows3 = _buckets(one), _buckets(three)
    assert rows3.keys() == rows1.keys() and {k[4] for k in rows3} == {engine.BUCKET_SHARD}
    for k, stats in rows1.items():
        _same_stats(rows3[k], stats)
    with three.read() as conn:
        assert {int(r[0]) for r in conn.exec_driver_sql("SELECT DISTINCT shard FROM predictions")} == {0, 1, 2}
    _close(_readouts(url, capsys), _readouts(f"sqlite:///{tmp_path / 'one.db'}", capsys))
    one.close()
    three.close()


def test_the_exact_ranking_reads_every_partitions_join_rows(lines, tmp_path):
    """held_pairs finds every labelled prediction of the window on the join rows of all three partitions (it took
    the partitions from the bucket rows' shards, which say nothing now)."""
    store = _store(f"sqlite:///{tmp_path / 'three.db'}", lines, 3)
    end = datetime(2026, 11, 30, tzinfo=timezone.utc).timestamp()
    window = Window(end - 3 * 86400, end)
    rows = window_rows(store, None, window)
    stats = merged(rows)
    labelled = int(stats.conf[:2].sum())
    assert labelled > 500
    pairs = held_pairs(store, None, window, rows, stats)
    assert pairs is not None and len(pairs[1]) == labelled and int(pairs[1].sum()) == int(stats.conf[1].sum())
    store.close()


def _migration() -> Any:
    spec = importlib.util.spec_from_file_location("onerow_0014", revisions.VERSIONS / "0014_onerow.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _per_partition_store(url: str, lines: list[bytes], partitions: int, monkeypatch: pytest.MonkeyPatch) -> Store:
    """A store at the revisions before 0014_onerow holding one bucket row per partition an hour, as `run` wrote
    them: each partition's records stored apart with the engine's bucket shard set to the partition."""
    from test_migrations import _upgrade_to

    _upgrade_to(url, sorted(revisions.script_heads() - {"0014_onerow"} | {"0013_featapart"}))
    decode = msgspec.json.Decoder(_Id).decode
    parts: list[list[bytes]] = [[] for _ in range(partitions)]
    for line in lines:
        parts[zlib.crc32(decode(line).prediction_id.encode()) % partitions].append(line)
    store = Store(url, clock=lambda: CLOCK)
    for p, mine in enumerate(parts):
        with monkeypatch.context() as m:
            m.setattr(engine, "BUCKET_SHARD", p)
            m.setattr(batch_columns, "BUCKET_SHARD", p)
            pipeline = Pipeline(Config(), store, clock=lambda: CLOCK)
            for i in range(0, len(mine), 700):
                pipeline.process_batch([RawRecord("events", p, i + j, line) for j, line in enumerate(mine[i:i + 700])])
    return store


def _run_migration(store: Store, chunk: int) -> None:
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    mod = _migration()
    mod.CHUNK = chunk
    with store.engine.begin() as conn, Operations.context(MigrationContext.configure(conn)):
        mod.upgrade()
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0014_onerow' "
                             "WHERE version_num = '0013_featapart'")


@pytest.mark.parametrize("chunk", [None, 7])
def test_the_migration_merges_each_hours_partitions(url, lines, monkeypatch, capsys, chunk):
    """`None`: the store's own migrate (Alembic); 7: the migration run directly, 7 hour groups a page. Every hour's
    rows become one row in shard 0 equal to their merge in shard order (features included); a compacted day and
    an hour with a row that does not decode stay as they were; the readouts are unchanged to rounding."""
    store = _per_partition_store(url, lines, 3, monkeypatch)
    before = _buckets(store)
    assert {k[4] for k in before} == {0, 1, 2}
    pg = store.dialect == "postgresql"
    insert = ("INSERT INTO buckets (model, model_version, variant, bucket_start, shard, data) VALUES "
              + ("('handmade', 'v1', 'A', %(start)s, %(shard)s, %(data)s)" if pg
                 else "('handmade', 'v1', 'A', ?, ?, ?)"))
    handmade = [(86400, -1, BucketStats().to_bytes()), (7200, 0, b"\xc1damaged"), (7200, 2, b"\xc1damaged")]
    with store.engine.begin() as conn:  # a compacted day row and an hour that does not decode: left as they are
        for row in handmade:
            conn.exec_driver_sql(insert, dict(zip(("start", "shard", "data"), row)) if pg else row)
    _stamp(store, "0013_featapart", "0014_onerow")  # read as the current reader reads the old rows: every shard summed
    readouts = _readouts(url, capsys)
    _stamp(store, "0014_onerow", "0013_featapart")
    if chunk is None:
        store.migrate()
    else:
        _run_migration(store, chunk)
    assert store.schema_is_current()
    after = _buckets_raw(store)
    assert [after[("handmade", "v1", "A", start, shard)] for start, shard, _ in handmade] == [d for *_, d in handmade]
    hours: dict[tuple[str, str, str, int], list[BucketStats]] = {}
    for k in sorted(before):
        hours.setdefault(k[:4], []).append(before[k])
    merged_rows = _buckets(_without(store, "handmade"))
    assert merged_rows.keys() == {(*h, 0) for h in hours}
    for h, parts in hours.items():
        expect = BucketStats()
        for s in parts:
            expect.add(s)
        assert merged_rows[(*h, 0)].to_bytes() == expect.to_bytes()  # features included (read from their rows)
    _close(_readouts(url, capsys), readouts)
    store.close()


def _buckets_raw(store: Store) -> dict[Key, bytes]:
    with store.read() as conn:
        return {(r[0], r[1], r[2], int(r[3]), int(r[4])): bytes(r[5]) for r in conn.exec_driver_sql(
            "SELECT model, model_version, variant, bucket_start, shard, data FROM buckets")}


def _without(store: Store, model: str) -> Store:
    """The store with the model's rows deleted (hand-made ones, some not decodable), so the rest can be decoded."""
    with store.engine.begin() as conn:
        conn.exec_driver_sql(f"DELETE FROM buckets WHERE model = '{model}'")
    return store


def _stamp(store: Store, old: str, new: str) -> None:
    """The revision `old` recorded as `new` (no migration run)."""
    with store.engine.begin() as conn:
        conn.exec_driver_sql(f"UPDATE alembic_version SET version_num = '{new}' WHERE version_num = '{old}'")


def test_an_older_writer_after_the_migration_loses_and_doubles_nothing(url, lines, tmp_path, capsys, monkeypatch):
    """A replica of the version before (its bucket rows per partition: BUCKET_SHARD its partition) still storing
    partition 1 after 0014_onerow, beside a new one storing partition 0, batch after batch: outcomes crossing the
    partitions move counts in the other version's rows. The readouts equal those of the new version alone."""
    alone = f"sqlite:///{tmp_path / 'alone.db'}"
    _store(alone, lines, 2).close()
    store = Store(url, clock=lambda: CLOCK)
    store.migrate()
    new, old = Pipeline(Config(), store, clock=lambda: CLOCK), Pipeline(Config(), store, clock=lambda: CLOCK)
    for records in _batches(lines, 2):
        new.process_batch([r for r in records if r.partition == 0])
        with monkeypatch.context() as m:
            m.setattr(engine, "BUCKET_SHARD", 1)
            m.setattr(batch_columns, "BUCKET_SHARD", 1)
            old.process_batch([r for r in records if r.partition == 1])
    assert {k[4] for k in _buckets(store)} == {0, 1}
    _close(_readouts(url, capsys), _readouts(alone, capsys))
    store.close()


def test_the_migration_merges_each_hour_as_its_rows_arrive():
    """merged_hours holds one hour's rows at a time (the tryout found a page of 500 hours × every partition's rows
    held at once: 304 MB on SQLite, 649 MB on PostgreSQL at 12 partitions of ~31 kB rows): each hour is merged
    and handed on before the next hour's second row is read; hours not wanted are skipped, merge's None left out."""
    pulled = [0]
    rows = [("m", "v", "A", h, p) for h in range(5) for p in range(4)]

    def source():
        for r in rows:
            pulled[0] += 1
            yield r

    seen = []
    for series, mine, total in _migration().merged_hours(source(), {(h and ("m", "v", "A", h)) for h in range(4)},
                                                            lambda rs: None if rs[0][3] == 2 else len(rs)):
        assert pulled[0] <= 4 * (series[3] + 1) + 1  # this hour's rows and at most the next one's first
        seen.append((series, len(mine), total))
    assert seen == [(("m", "v", "A", h), 4, 4) for h in (1, 3)]
