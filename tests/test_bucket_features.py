"""Feature histograms stored apart from the other bucket statistics (table bucket_features, migration
0013_featapart, storage/bucket_writes.py): every bucket reads back as the single-blob route wrote it, on replayed
streams (simulated and dirty), on SQLite and PostgreSQL, at two batch sizes; the migration moves every blob's "f"
out with the readouts unchanged, and its downgrade restores the blobs byte for byte; compaction and forget move and
delete the feature rows; a batch retried after an error finds its deltas as they were."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.cli import main
from driftline.config import from_dict
from driftline.core.stats import BucketStats
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage import bucket_writes, pgread, revisions
from driftline.storage import forget as fg
from driftline.storage.bulk import _columns, _pg_columns
from driftline.storage.compaction import compact
from driftline.storage.store import Store

from test_batch_engine import dirty_streams

CLOCK = 1_796_000_000.0
Key = tuple[str, str, str, int, int]
MIGRATION = revisions.VERSIONS / "0013_featapart.py"


def _frozen_merge_chunk(conn: Any, dialect: str, keys: list[Key], deltas: dict[Key, BucketStats],
                        before: Any = None) -> None:
    """bulk._merge_chunk before 0013_featapart (verbatim but for names): each delta, features included, added into
    its one `buckets` blob."""
    existing: dict[Key, bytes] = {}
    if dialect == "postgresql":
        key_columns = _pg_columns(conn, _columns(keys), bucket_writes._BUCKET_KINDS)
        read = bucket_writes.PG_BUCKET_READ
        if before is None:
            rows = pgread.fetch_binary(conn, read, key_columns)
        else:
            first, rows = pgread.fetch_binary_all(conn, [(before[0], before[1]), (read, key_columns)])
            before[2](first)
        existing = {r[:5]: r[5] for r in rows}  # type: ignore[misc]
    else:
        rows = conn.exec_driver_sql(bucket_writes._stored_buckets_sql(len(keys)), tuple(v for k in keys for v in k))
        existing = {tuple(r[:5]): r[5] for r in rows}  # type: ignore[misc]
    data = bucket_writes.encode_merged(list(map(existing.get, keys)), list(map(deltas.__getitem__, keys)))
    if dialect == "postgresql":
        conn.exec_driver_sql(bucket_writes._PG_UPSERT, (*key_columns, data))
    else:
        conn.exec_driver_sql(f"INSERT INTO buckets ({bucket_writes.BUCKET_KEY}, data) VALUES (?, ?, ?, ?, ?, ?) "
                             f"ON CONFLICT ({bucket_writes.BUCKET_KEY}) DO UPDATE SET data = excluded.data",
                             [(*k, d) for k, d in zip(keys, data)])


def _rows(store: Store, table: str) -> dict[Key, bytes]:
    with store.read() as conn:
        return {(r[0], r[1], r[2], int(r[3]), int(r[4])): bytes(r[5]) for r in conn.exec_driver_sql(
            f"SELECT model, model_version, variant, bucket_start, shard, data FROM {table}")}


def _decoded(store: Store) -> dict[Key, bytes]:
    """Every stored bucket decoded whole (its feature row added) and re-encoded in the single-blob form."""
    feats = _rows(store, "bucket_features")
    return {k: BucketStats.from_bytes(d, feature_data=feats.get(k)).to_bytes()
            for k, d in _rows(store, "buckets").items()}


def _old_decoded(blobs: dict[Key, bytes]) -> dict[Key, bytes]:
    return {k: BucketStats.from_bytes(d).to_bytes() for k, d in blobs.items()}


def _ingest(store: Store, raws: Sequence[tuple[bytes, int]], batch: int) -> None:
    _ingest_from(store, raws, batch, raws)


def _replayed(url: str, raws: Sequence[tuple[bytes, int]], batch: int, frozen: bool,
              monkeypatch: pytest.MonkeyPatch, migrate: bool = True) -> Store:
    store = Store(url, clock=lambda: CLOCK)
    if migrate:
        store.migrate()
    with monkeypatch.context() as m:
        if frozen:
            m.setattr(bucket_writes, "_merge_chunk", _frozen_merge_chunk)
        _ingest(store, raws, batch)
    return store


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, int]]:
    """`driftline simulate` (8 days), each event on one of two shards."""
    path = tmp_path_factory.mktemp("sim") / "ev.jsonl"
    assert main(["simulate", "--days", "8", "--per-day", "600", "--seed", "7", "--end", "2026-11-30T00:00:00Z",
                 "--out", str(path)]) == 0
    return [(line, i % 3 % 2) for i, line in enumerate(path.read_bytes().splitlines())]


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'new.db'}"
    return request.getfixturevalue("pg_url")


@pytest.mark.parametrize("batch", [700, 6000])
def test_replayed_buckets_equal_the_single_blob_route(simulated, url, batch, tmp_path, monkeypatch):
    old = _replayed(f"sqlite:///{tmp_path / 'old.db'}", simulated, batch, True, monkeypatch)
    new = _replayed(url, simulated, batch, False, monkeypatch)
    blobs, feats = _rows(new, "buckets"), _rows(new, "bucket_features")
    assert blobs.keys() == _rows(old, "buckets").keys() and feats and set(feats) <= set(blobs)
    assert all(msgspec.msgpack.decode(d)["f"] == {} for d in blobs.values())  # the blob holds no histogram
    assert _decoded(new) == _old_decoded(_rows(old, "buckets"))
    old.close()
    new.close()


def test_an_older_writer_after_the_migration_loses_and_doubles_nothing(simulated, url, tmp_path, monkeypatch):
    """A rolling update: an older `run` still writing after 0013_featapart puts its new predictions' histograms
    back inside the bucket blob (the single-blob route); newer writers keep theirs in bucket_features and readers
    add the two, so the buckets read as if one writer of either kind had stored every event."""
    third = len(simulated) // 3
    parts = (simulated[:third], simulated[third:2 * third], simulated[2 * third:])
    old = Store(f"sqlite:///{tmp_path / 'old.db'}", clock=lambda: CLOCK)
    old.migrate()
    mixed = Store(url, clock=lambda: CLOCK)
    mixed.migrate()
    for k, part in enumerate(parts):  # the same batches for both (a float sum may differ with the batch split)
        with monkeypatch.context() as m:
            m.setattr(bucket_writes, "_merge_chunk", _frozen_merge_chunk)
            _ingest_from(old, part, 700, simulated)
            if k == 1:
                _ingest_from(mixed, part, 700, simulated)
        if k != 1:
            _ingest_from(mixed, part, 700, simulated)
    blobs = _rows(mixed, "buckets")
    assert any(msgspec.msgpack.decode(d)["f"] for d in blobs.values())  # the older writer's histograms are there
    want = _in_key_order(_old_decoded(_rows(old, "buckets")))
    assert _in_key_order(_decoded(mixed)) == want
    windows = mixed.buckets(None, -2**62, 2**62, features=True)
    assert _in_key_order({(r.model, r.model_version, r.variant, r.bucket_start, r.shard): r.stats.to_bytes()
                          for r in windows}) == want
    old.close()
    mixed.close()


def _in_key_order(blobs: dict[Key, bytes]) -> dict[Key, bytes]:
    """Each bucket re-encoded with its histograms' bins and categories in key order: a bucket written by both kinds
    of writer holds the same counts, but its categories in the order the two parts are added when read, not the
    order they were first seen."""
    out = {}
    for k, data in blobs.items():
        b = BucketStats.from_bytes(data)
        for fh in b.features.values():
            fh.num, fh.cat = dict(sorted(fh.num.items())), dict(sorted(fh.cat.items()))
        out[k] = b.to_bytes()
    return out


def _ingest_from(store: Store, part: Sequence[tuple[bytes, int]], batch: int,
                 whole: Sequence[tuple[bytes, int]]) -> None:
    """_ingest of `part`, a slice of `whole`, at the offsets its records have in `whole` (positions continue)."""
    start = next(i for i in range(len(whole)) if whole[i:i + len(part)] == part)
    offsets = [sum(1 for _, s in whole[:start] if s == shard) for shard in (0, 1)]
    pipe = Pipeline(from_dict({}), store, clock=lambda: CLOCK)
    for i in range(0, len(part), batch):
        records = []
        for raw, shard in part[i:i + batch]:
            records.append(RawRecord("t", shard, offsets[shard], raw))
            offsets[shard] += 1
        pipe.process_batch(records)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(dirty_streams(), st.sampled_from([1, 3, 1000]))
def test_dirty_streams_read_back_as_the_single_blob_route_wrote_them(tmp_path_factory, monkeypatch, stream, batch):
    """Duplicates, conflicting copies, corrections, stale and early outcomes, shadow variants, in any order."""
    raws, shards = stream
    work = tmp_path_factory.mktemp("dirty")
    old = _replayed(f"sqlite:///{work / 'old.db'}", list(zip(raws, shards)), batch, True, monkeypatch)
    new = _replayed(f"sqlite:///{work / 'new.db'}", list(zip(raws, shards)), batch, False, monkeypatch)
    assert _decoded(new) == _old_decoded(_rows(old, "buckets"))
    old.close()
    new.close()


def test_a_failed_chunk_gives_the_deltas_their_features_back(tmp_path, simulated, monkeypatch):
    """A batch is retried after StalePositions or a COPY fallback: the deltas must come out as they went in."""
    store = Store(f"sqlite:///{tmp_path / 'r.db'}", clock=lambda: CLOCK)
    store.migrate()
    seen: list[dict[Key, BucketStats]] = []

    def failing(olds: Any, deltas: Any) -> Any:
        assert not any(d.features for d in deltas)  # encoded without their histograms
        raise RuntimeError("stop")

    real = bucket_writes._merge_chunk

    def spy(conn: Any, dialect: str, keys: list[Key], deltas: dict[Key, BucketStats], before: Any = None) -> None:
        seen.append({k: deltas[k] for k in keys})
        before_doc = {k: sorted(d.features) for k, d in seen[-1].items()}
        with pytest.raises(RuntimeError):
            real(conn, dialect, keys, deltas, before)
        assert {k: sorted(d.features) for k, d in seen[-1].items()} == before_doc
        raise RuntimeError("done")

    monkeypatch.setattr(bucket_writes, "encode_merged", failing)
    monkeypatch.setattr(bucket_writes, "_merge_chunk", spy)
    with pytest.raises(RuntimeError, match="done"):
        _ingest(store, simulated[:200], 200)
    assert any(d.features for d in seen[0].values())
    store.close()


def _migration() -> Any:
    spec = importlib.util.spec_from_file_location("featapart_0013", MIGRATION)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _run_migration(store: Store, step: str, chunk: int) -> None:
    """The migration's upgrade or downgrade run directly, with keyset pages of `chunk` rows."""
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    mod = _migration()
    mod.CHUNK = chunk
    with store.engine.begin() as conn, Operations.context(MigrationContext.configure(conn)):
        getattr(mod, step)()
        if step == "upgrade":
            # 0014_onerow, which follows, has nothing to do here (one bucket shard): recorded with it
            conn.exec_driver_sql("INSERT INTO alembic_version (version_num) VALUES ('0014_onerow')")


def _old_store(url: str, raws: Sequence[tuple[bytes, int]], monkeypatch: pytest.MonkeyPatch) -> Store:
    """A store at the revisions before 0013_featapart, written by the single-blob route."""
    from test_migrations import _upgrade_to

    _upgrade_to(url, sorted(revisions.script_heads() - {"0014_onerow"}))
    return _replayed(url, raws, 2500, True, monkeypatch, migrate=False)


def _readouts(db: Path) -> dict[str, Any]:
    base = ["--db", f"sqlite:///{db}"]
    out: dict[str, Any] = {}
    assert main([*base, "reference", "set", "--model", "fraud", "--from", "2026-11-22", "--to", "2026-11-25"]) == 0
    for cmd in ("metrics", "drift", "calibration", "ab"):
        out[cmd] = _json_out(lambda: main([*base, cmd, "--json"]))
    return out


_CAPTURE: list[Any] = []


def _json_out(run: Any) -> Any:
    capsys = _CAPTURE[0]
    capsys.readouterr()
    assert run() == 0
    return _no_created_at(json.loads(capsys.readouterr().out))


def _no_created_at(doc: Any) -> Any:
    """The document without the references' creation times (wall clock)."""
    if isinstance(doc, dict):
        return {k: _no_created_at(v) for k, v in doc.items() if k != "created_at"}
    if isinstance(doc, list):
        return [_no_created_at(v) for v in doc]
    return doc


@pytest.mark.parametrize("chunk", [None, 7])
def test_the_migration_moves_the_features_out_and_its_downgrade_back(tmp_path, simulated, monkeypatch, capsys,
                                                                     chunk):
    """`None`: the store's own migrate (Alembic); 7: the migration run directly, in pages of 7 rows. The readouts
    before are read from a copy of the old store where the table exists empty and the revision is recorded (the
    current reader then reads the blobs whole, as the reader before 0013 does)."""
    _CAPTURE[:] = [capsys]
    db, copy = tmp_path / "old.db", tmp_path / "before.db"
    store = _old_store(f"sqlite:///{db}", simulated, monkeypatch)
    old = _rows(store, "buckets")
    assert sum(bool(msgspec.msgpack.decode(d)["f"]) for d in old.values()) > 10
    store.close()
    shutil.copy(db, copy)
    with sqlite3.connect(copy) as raw:
        raw.execute("CREATE TABLE bucket_features (model VARCHAR(200) NOT NULL, model_version VARCHAR(200) NOT NULL, "
                    "variant VARCHAR(200) NOT NULL, bucket_start BIGINT NOT NULL, shard INTEGER NOT NULL, data BLOB "
                    "NOT NULL, PRIMARY KEY (model, model_version, variant, bucket_start, shard))")
        raw.execute("INSERT INTO alembic_version (version_num) VALUES ('0014_onerow')")
    before = _readouts(copy)
    store = Store(f"sqlite:///{db}")
    if chunk is None:
        store.migrate()
    else:
        _run_migration(store, "upgrade", chunk)
    assert store.schema_is_current()
    assert _decoded(store) == _old_decoded(old)
    assert all(msgspec.msgpack.decode(d)["f"] == {} for d in _rows(store, "buckets").values())
    after = _readouts(db)
    assert after == before
    drifted = after["drift"]["features"]  # drift reads the histograms from the feature rows now
    assert len(drifted) >= 3 and all(f["n_current"] > 0 and f["n_reference"] > 0 for f in drifted), drifted
    _run_migration(store, "downgrade", chunk or 1000)
    assert _rows(store, "buckets") == old  # byte for byte
    with store.read() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM sqlite_master WHERE name = 'bucket_features'").scalar() == 0
    store.close()


def test_the_migration_on_postgresql(pg_url, simulated, monkeypatch):
    store = _old_store(pg_url, simulated, monkeypatch)
    old = _rows(store, "buckets")
    _run_migration(store, "upgrade", 7)
    assert store.schema_is_current()
    assert _decoded(store) == _old_decoded(old) and _rows(store, "bucket_features")
    _run_migration(store, "downgrade", 5)
    assert _rows(store, "buckets") == old
    store.close()


def test_compaction_moves_the_feature_rows_and_forget_deletes_them(url, simulated, monkeypatch):
    store = _replayed(url, simulated, 3000, False, monkeypatch)
    before = _decoded(store)
    days: dict[tuple[str, str, str, int], list[bytes]] = {}
    cutoff = (CLOCK // 86400 - 4) * 86400
    for k, data in sorted(before.items()):
        if k[3] < cutoff:
            days.setdefault((k[0], k[1], k[2], k[3] // 86400 * 86400), []).append(data)
    done = compact(store, cutoff)
    assert done.groups == len(days) > 0
    after = _decoded(store)
    feats = _rows(store, "bucket_features")
    assert set(feats) <= set(_rows(store, "buckets"))  # no feature row left without its bucket
    for (m, v, var, day), datas in days.items():
        total = BucketStats()
        for d in datas:
            total.add(BucketStats.from_bytes(d))
        assert after[(m, v, var, day, -1)] == total.to_bytes()
        assert (m, v, var, day, -1) in feats
    assert {k: d for k, d in after.items() if k[4] != -1} == {k: d for k, d in before.items() if k[3] >= cutoff}
    assert fg.preview(store, "fraud").rows["bucket_features"] == len(feats)
    fg.forget(store, "fraud")
    assert _rows(store, "bucket_features") == {} and _rows(store, "buckets") == {}
    store.close()
