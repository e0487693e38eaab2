"""The store's fast write paths give the reference bytes and rows exactly, on clean and on dirty input: the sparse
bucket merge and array packing (core/stats.py) against the dense numpy routes they replace, and the SQLite
multi-row inserts and C-getter rows (storage/bulk.py) against one statement step per row, and PostgreSQL binary
arrays built by storage/pgarrays.py against psycopg's own list dumping (compared on the server)."""

from __future__ import annotations

import math

import sqlite3
import struct
from typing import Any

import msgspec
import pytest
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine

from driftline.core.engine import OutcomeRecord, PredRecord
from driftline.core.grids import N_FEATURE_BINS, N_SCORE_BINS
from driftline.core.encoded import add_encoded
from driftline.core.rank_hist import RANK_ROW
from driftline.core.stats import BucketStats, FeatureHist
from driftline.storage import bulk, sqlite_rows
from driftline.storage.sqlite_binding import register_adapters

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _ref_feature_doc(fh: FeatureHist) -> list[object]:
    """The numpy packing the fast path replaced (verbatim)."""
    idx = np.fromiter(fh.num.keys(), dtype=np.int32, count=len(fh.num))
    cnt = np.fromiter(fh.num.values(), dtype=np.int64, count=len(fh.num))
    return [[idx.tobytes(), cnt.tobytes()], list(fh.cat.items()), fh.missing]


def _ref_to_bytes(b: BucketStats) -> bytes:
    nz = np.flatnonzero(b.hist.ravel() | (b.psum.ravel() != 0))
    dnz = np.flatnonzero(b.delay)
    return msgspec.msgpack.encode({
        "v": 1, "conf": b.conf.ravel().tolist(), "hi": nz.astype(np.int32).tobytes(),
        "hc": b.hist.ravel()[nz].astype(np.int64).tobytes(), "hp": b.psum.ravel()[nz].astype(np.float64).tobytes(),
        "sums": b.sums.ravel().tolist(), "di": dnz.astype(np.int32).tobytes(),
        "dc": b.delay[dnz].astype(np.int64).tobytes(), "f": {k: _ref_feature_doc(fh) for k, fh in b.features.items()},
        "exp": b.expired, "imp": b.implicit,
        "s": {k: {v: c.ravel().tolist() for v, c in vals.items()} for k, vals in b.slices.items()},
        **({} if b.rank is None else {"ri": np.asarray(b.rank[0], dtype=np.int32).tobytes(),
                                      "rc": ref_counts(b.rank[1].tolist()), "rs": b.sums.ravel()[:6].tolist()}),
        **({} if b.flag_range is None or not b.flag_range[2] else {
            "tr": [*map(float, b.flag_range[:2]), b.flag_range[2], int(b.conf.sum())]})})


def ref_counts(counts: list[int]) -> bytes:
    """Ranking counts as stored: little ints in the narrowest of int16, int32, int64 that holds every one."""
    for code, bits in (("h", 16), ("i", 32), ("q", 64)):
        if all(-2 ** (bits - 1) <= c < 2 ** (bits - 1) for c in counts):
            return struct.pack(f"<{len(counts)}{code}", *counts)
    raise OverflowError(counts)


def ref_read_counts(ri: bytes, rc: bytes) -> list[int]:
    """Stored ranking counts back, their width told by the two lengths (4-byte keys)."""
    n = len(ri) // 4
    if not n:
        assert rc == b""
        return []
    code = {2: "h", 4: "i", 8: "q"}[len(rc) // n]
    return list(struct.unpack(f"<{n}{code}", rc))


def ref_rank_into(doc: dict[str, Any], delta: BucketStats, data: bytes) -> None:
    """The ranking histogram a stored bucket (`data`) plus a delta must hold, set in the summed doc, by dict sums:
    the stored "ri"/"rc" if its "rs" still equals the labelled rows of its "sums" (none stored: empty if the
    bucket held no labels, else unknown), plus the delta's; unknown (no keys) when either is unknown."""
    before = msgspec.msgpack.decode(data)
    if "ri" in before or "rc" in before:
        fresh = before.get("rs") is not None and before["rs"] == before["sums"][:6]
        stored: dict[int, int] | None = dict(zip(np.frombuffer(before["ri"], dtype=np.int32).tolist(),
                                                 ref_read_counts(before["ri"], before["rc"]))) if fresh else None
    else:
        stored = {} if sum(before["conf"][:4]) == 0 else None
    if stored is None or delta.rank is None:
        for key in ("ri", "rc", "rs"):
            doc.pop(key, None)
        return
    for k, v in zip(delta.rank[0].tolist(), delta.rank[1].tolist()):
        stored[k] = stored.get(k, 0) + v
    keys = sorted(k for k, v in stored.items() if v)
    doc["ri"] = np.array(keys, dtype=np.int32).tobytes()
    doc["rc"] = ref_counts([stored[k] for k in keys])
    doc["rs"] = list(doc["sums"][:6])


def ref_range_into(doc: dict[str, Any], delta: BucketStats, data: bytes) -> None:
    """The flag range a stored bucket (`data`) plus a delta must hold, set in the summed doc: the stored "tr" if it
    was written for the stored prediction count (none stored: empty if the bucket held no predictions, else
    unknown), widened by the delta's; none when either is unknown or no prediction was counted."""
    before = msgspec.msgpack.decode(data)
    tr, n = before.get("tr"), sum(before["conf"])
    if tr is None:
        stored = [math.inf, -math.inf, 0] if n == 0 else None
    else:
        ok = (isinstance(tr, list) and len(tr) == 4 and all(type(x) is float for x in tr[:2])
              and all(type(x) is int for x in tr[2:]) and tr[3] == n and 0 < tr[2] < 4 and tr[0] <= tr[1])
        stored = tr[:3] if ok else None
    if stored is None or delta.flag_range is None or not (stored[2] | delta.flag_range[2]):
        doc.pop("tr", None)
        return
    lo, hi, src = delta.flag_range
    doc["tr"] = [float(min(stored[0], lo)), float(max(stored[1], hi)), stored[2] | src, sum(doc["conf"])]


def _ref_add_encoded(data: bytes, delta: BucketStats) -> bytes:
    """add_encoded before the sparse routes (verbatim, dense score and feature bins)."""
    doc = msgspec.msgpack.decode(data)
    feats = doc["f"]
    if any(not (isinstance(num, list) and len(num) == 2 and isinstance(num[0], bytes)) for num, _, _ in
           feats.values()):
        return BucketStats.from_bytes(data).add(delta).to_bytes()
    doc["conf"] = (np.asarray(doc["conf"], dtype=np.int64) + delta.conf.ravel()).tolist()
    doc["sums"] = (np.asarray(doc["sums"], dtype=np.float64) + delta.sums.ravel()).tolist()
    hist, psum = delta.hist.ravel().copy(), delta.psum.ravel().copy()
    idx = np.frombuffer(doc["hi"], dtype=np.int32)
    hist[idx] += np.frombuffer(doc["hc"], dtype=np.int64)
    psum[idx] += np.frombuffer(doc["hp"], dtype=np.float64)
    nz = np.flatnonzero((hist != 0) | (psum != 0))
    doc["hi"], doc["hc"], doc["hp"] = nz.astype(np.int32).tobytes(), hist[nz].tobytes(), psum[nz].tobytes()
    if delta.delay.any():
        delay = delta.delay.copy()
        delay[np.frombuffer(doc["di"], dtype=np.int32)] += np.frombuffer(doc["dc"], dtype=np.int64)
        dnz = np.flatnonzero(delay)
        doc["di"], doc["dc"] = dnz.astype(np.int32).tobytes(), delay[dnz].tobytes()
    for name, fh in delta.features.items():
        old = feats.get(name)
        if old is None:
            feats[name] = _ref_feature_doc(fh)
            continue
        fh.unpack()
        if fh.num:
            dense = np.zeros(N_FEATURE_BINS, dtype=np.int64)
            dense[np.frombuffer(old[0][0], dtype=np.int32)] = np.frombuffer(old[0][1], dtype=np.int64)
            dense[np.fromiter(fh.num.keys(), dtype=np.int64, count=len(fh.num))] += np.fromiter(
                fh.num.values(), dtype=np.int64, count=len(fh.num))
            fnz = np.flatnonzero(dense)
            old[0] = [fnz.astype(np.int32).tobytes(), dense[fnz].tobytes()]
        if fh.cat:
            cat = dict(old[1])
            for c, v in fh.cat.items():
                cat[c] = cat.get(c, 0) + v
            old[1] = list(cat.items())
        old[2] = int(old[2]) + fh.missing
    doc["exp"] = int(doc["exp"]) + delta.expired
    doc["imp"] = int(doc["imp"]) + delta.implicit
    slices = doc.setdefault("s", {})
    for name, values in delta.slices.items():
        mine = slices.setdefault(name, {})
        for value, conf in values.items():
            prev = mine.get(value)
            mine[value] = (conf.ravel() + (0 if prev is None else np.asarray(prev, dtype=np.int64))).tolist()
    ref_rank_into(doc, delta, data)
    ref_range_into(doc, delta, data)
    return msgspec.msgpack.encode(doc)


BIN = st.one_of(st.integers(0, N_FEATURE_BINS - 1), st.sampled_from([0, 1, N_FEATURE_BINS - 1]))
DIRTY_BIN = st.one_of(BIN, st.sampled_from([-1, -N_FEATURE_BINS, True, np.int64(7), np.int32(3)]))
COUNT = st.one_of(st.integers(-5, 50), st.sampled_from([0, 2**62, -(2**62), np.int64(3), True]))
PSUM = st.one_of(st.floats(-5, 5, allow_nan=False), st.sampled_from([0.0, -0.0, 1e-17, -1e-17]))


@st.composite
def buckets(draw: Any, dirty: bool) -> BucketStats:
    """A bucket with sparse score bins (some only in psum, some ±0.0), delays, numeric and categorical features."""
    b = BucketStats()
    for _ in range(draw(st.integers(0, 12))):
        i = draw(st.integers(0, 3 * N_SCORE_BINS - 1))
        b.hist.ravel()[i] = draw(st.integers(-3, 40))
        b.psum.ravel()[i] = draw(PSUM)
    for _ in range(draw(st.integers(0, 3))):
        b.delay[draw(st.integers(0, b.delay.size - 1))] += draw(st.integers(0, 9))
    b.conf.ravel()[draw(st.integers(0, 5))] = draw(st.integers(0, 99))
    b.sums.ravel()[draw(st.integers(0, 8))] = draw(st.floats(-9, 9, allow_nan=False))
    for name in draw(st.lists(st.sampled_from("abcd"), unique=True, max_size=4)):
        num = draw(st.dictionaries(DIRTY_BIN if dirty else BIN, COUNT if dirty else st.integers(0, 50),
                                   max_size=30))
        cat = draw(st.dictionaries(st.sampled_from(["FR", "DE", "x"]), st.integers(0, 9), max_size=3))
        b.features[name] = FeatureHist(num, cat, draw(st.integers(0, 5)))
    b.expired, b.implicit = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    if draw(st.booleans()):
        b.slices["country"] = {"FR": np.arange(6, dtype=np.int64).reshape(3, 2)}
    kind = draw(st.sampled_from(["empty", "some", "unknown"]))  # unknown: stored without one (an older bucket)
    if kind == "unknown":
        b.rank = None
    elif kind == "some":
        ranks = draw(st.dictionaries(st.integers(0, RANK_ROW - 1), (st.integers(-3, 40) | st.sampled_from(
            [2**15, -2**15 - 1, 2**31, 2**40, -(2**31) - 1])).filter(bool), max_size=20))
        keys = sorted(ranks)
        b.rank = (np.array(keys, dtype=np.int32), np.array([ranks[k] for k in keys], dtype=np.int64))
    flags = draw(st.sampled_from(["empty", "some", "unknown"]))  # the thresholds the predictions were flagged at
    if flags == "unknown":
        b.flag_range = None
    elif flags == "some":
        lo, hi = sorted(draw(st.lists(st.sampled_from([0.0, 0.3, 0.5, 0.55, 1.0]), min_size=2, max_size=2)))
        b.flag_range = (lo, hi, draw(st.integers(1, 3)))
    return b


def _same(fast: Any, ref: Any) -> None:
    """Both raise the same kind of error, or give the same bytes."""
    try:
        want = ref()
    except Exception as err:  # noqa: BLE001 - the fast path must fail alike
        try:
            fast()
        except Exception as mine:  # noqa: BLE001
            assert type(mine) is type(err)
            return
        raise AssertionError(f"reference raised {err!r}, fast path did not")
    assert fast() == want


@SETTINGS
@given(buckets(dirty=True))
def test_to_bytes_packs_exactly_like_numpy(b: BucketStats) -> None:
    _same(b.to_bytes, lambda: _ref_to_bytes(b))


@SETTINGS
@given(buckets(dirty=False), buckets(dirty=True))
def test_add_encoded_equals_the_dense_route(stored: BucketStats, delta: BucketStats) -> None:
    with np.errstate(all="ignore"):
        data = _ref_to_bytes(stored)
        _same(lambda: add_encoded(data, delta.copy()), lambda: _ref_add_encoded(data, delta.copy()))


@SETTINGS
@given(buckets(dirty=False), buckets(dirty=False), st.integers(0, 4))
def test_add_encoded_on_malformed_stored_bins_equals_the_dense_route(stored: BucketStats, delta: BucketStats,
                                                                     how: int) -> None:
    doc = msgspec.msgpack.decode(_ref_to_bytes(stored))
    if how == 0:  # repeated score bins
        doc["hi"], doc["hc"], doc["hp"] = doc["hi"] * 2, doc["hc"] * 2, doc["hp"] * 2
    elif how == 1:  # a negative score bin (numpy wraps it to the end)
        doc["hi"] = np.asarray([-1], dtype=np.int32).tobytes()
        doc["hc"], doc["hp"] = np.asarray([4], dtype=np.int64).tobytes(), np.asarray([0.5]).tobytes()
    elif how == 2:  # stored counts zero and psum -0.0
        doc["hi"] = np.asarray([5], dtype=np.int32).tobytes()
        doc["hc"], doc["hp"] = np.asarray([0], dtype=np.int64).tobytes(), np.asarray([-0.0]).tobytes()
    else:  # repeated or out-of-range feature bins
        for num, _, _ in doc["f"].values():
            bad = [N_FEATURE_BINS - 1, N_FEATURE_BINS - 1] if how == 3 else [-2]
            num[0] = np.asarray(bad, dtype=np.int32).tobytes()
            num[1] = np.asarray([1] * len(bad), dtype=np.int64).tobytes()
    data = msgspec.msgpack.encode(doc)
    _same(lambda: add_encoded(data, delta.copy()), lambda: _ref_add_encoded(data, delta.copy()))


def test_add_encoded_keeps_a_stored_negative_zero_psum_summed_like_numpy() -> None:
    stored = BucketStats()
    stored.hist[0, 3], stored.psum[0, 3] = 2, -0.0
    delta = BucketStats()
    delta.hist[1, 7], delta.psum[1, 7] = 1, 0.25
    data = _ref_to_bytes(stored)
    assert add_encoded(data, delta) == _ref_add_encoded(data, delta)


PIDS = st.one_of(st.sampled_from(["p1", "p2", "p10", "é", "x" * 200, ""]), st.text(max_size=8))
preds = st.builds(PredRecord, PIDS, st.sampled_from(["m", "n"]), st.sampled_from(["v1", "v2"]),
                  st.sampled_from(["A", "B"]), st.floats(-1e12, 1e12, allow_nan=False), st.floats(0, 1),
                  st.booleans(), st.integers(0, 2**31 - 1), st.one_of(st.none(), st.integers(0, 1)),
                  st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)), st.booleans(),
                  st.one_of(st.none(), st.dictionaries(st.sampled_from(["country", "é"]), st.text(max_size=4))))


@SETTINGS
@given(st.lists(preds, max_size=30))
def test_pred_rows_are_pred_tuples(records: list[PredRecord]) -> None:
    assert bulk.pred_rows(records) == [bulk.pred_tuple(r) for r in records]


def _stored(records_by_step: list[list[PredRecord]], fast: bool) -> list[tuple[Any, ...]]:
    """The predictions table after writing each list of records in turn (the SQLite fast path, or pred_rows one
    step per row)."""
    eng = create_engine("sqlite://")
    register_adapters()
    with eng.begin() as conn:
        conn.exec_driver_sql(
            "CREATE TABLE predictions (prediction_id VARCHAR(200) NOT NULL, model VARCHAR(200) NOT NULL, "
            "variant VARCHAR(200) NOT NULL, model_version VARCHAR(200) NOT NULL, ts FLOAT NOT NULL, "
            "score FLOAT NOT NULL, flagged BOOLEAN NOT NULL, shard INTEGER NOT NULL, label SMALLINT, label_ts FLOAT, "
            "implicit BOOLEAN NOT NULL, slice_values TEXT, PRIMARY KEY (prediction_id, model, variant)) "
            "WITHOUT ROWID")
        head = f"INSERT INTO predictions ({bulk.PRED_COLS}) VALUES "
        for records in records_by_step:
            if fast:
                bulk.write_predictions(conn, "sqlite", records)
            elif records:
                conn.exec_driver_sql(head + "(" + ", ".join(["?"] * 12) + ") " + bulk._PRED_CONFLICT,
                                     bulk.pred_rows(records))
        out = [tuple(r) for r in conn.exec_driver_sql(
            "SELECT *, typeof(ts), typeof(label_ts), typeof(flagged), typeof(label), typeof(implicit), "
            "typeof(slice_values) FROM predictions ORDER BY prediction_id, model, variant")]
    eng.dispose()
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(preds, max_size=200), min_size=1, max_size=3))
def test_multi_row_inserts_store_what_one_row_per_step_stores(batches: list[list[PredRecord]]) -> None:
    steps = [list({r.key: r for r in records}.values())  # a batch holds one record per key, as EngineResult.upserts
             for records in batches]  # in engine order: the fast path sorts
    assert _stored(steps, fast=True) == _stored(steps, fast=False)


def test_multi_row_inserts_at_the_group_boundaries() -> None:
    for n in (0, 1, sqlite_rows.ROWS_PER_INSERT - 1, sqlite_rows.ROWS_PER_INSERT, sqlite_rows.ROWS_PER_INSERT + 1,
              3 * sqlite_rows.ROWS_PER_INSERT + 7):
        recs = [PredRecord(f"p{i}", "m", "v", "A", float(i), 0.5, i % 2 == 0, i % 3, None if i % 4 else 1, None,
                           False, None if i % 5 else {"c": str(i)}) for i in range(n)]
        relabel = [PredRecord(r.prediction_id, r.model, r.model_version, r.variant, r.ts, r.score, r.flagged, r.shard,
                              0, 9.5, True, r.slice_values) for r in recs[::3]]
        assert _stored([recs, relabel], fast=True) == _stored([recs, relabel], fast=False)


outcomes = st.builds(OutcomeRecord, st.sampled_from([f"p{i}" for i in range(300)]), st.integers(0, 1),
                     st.floats(-1e12, 1e12, allow_nan=False), st.integers(0, 2**31 - 1), st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(outcomes, max_size=200), min_size=1, max_size=3))
def test_outcome_inserts_store_what_one_row_per_step_stores(batches: list[list[OutcomeRecord]]) -> None:
    stored = []
    for fast in (True, False):
        eng = create_engine("sqlite://")
        register_adapters()
        with eng.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE outcomes (prediction_id VARCHAR(200) NOT NULL, label SMALLINT NOT "
                                 "NULL, ts FLOAT NOT NULL, shard INTEGER NOT NULL, matched BOOLEAN NOT NULL, "
                                 "PRIMARY KEY (prediction_id)) WITHOUT ROWID")
            for records in batches:
                unique = list({o.prediction_id: o for o in records}.values())  # as EngineResult.outcomes
                if fast:
                    bulk.write_outcomes(conn, "sqlite", unique)
                elif unique:
                    conn.exec_driver_sql(f"INSERT INTO outcomes ({bulk._OUT_COLS}) VALUES (?, ?, ?, ?, ?) "
                                         + bulk._OUT_CONFLICT, list(map(bulk._OUT_FIELDS, unique)))
            stored.append([tuple(r) for r in conn.exec_driver_sql(
                "SELECT *, typeof(ts), typeof(matched) FROM outcomes ORDER BY prediction_id")])
        eng.dispose()
    assert stored[0] == stored[1]


def test_outcome_rows_in_column_order() -> None:
    o = OutcomeRecord("p1", 1, 3.5, 2, True)
    assert bulk._OUT_FIELDS(o) == ("p1", 1, 3.5, 2, True)
    assert sqlite3.sqlite_version_info >= (3, 24)  # UPSERT with multi-row VALUES


PG_VALUES = {
    "text": st.one_of(st.text(max_size=6), st.sampled_from(["", "é", "x" * 300, "a\x00b", "\ud800"]), st.integers()),
    "float8": st.one_of(st.floats(allow_nan=True), st.sampled_from([-0.0, 0.0, 1e308, 5e-324]), st.integers(-9, 9)),
    "int2": st.one_of(st.integers(-2**15, 2**15 - 1), st.sampled_from([2**15, True])),
    "int4": st.one_of(st.integers(-2**31, 2**31 - 1), st.sampled_from([2**31, 2**40])),
    "int8": st.integers(-2**63, 2**63 - 1),
    "bool": st.one_of(st.booleans(), st.sampled_from([0, 1])),
}


@pytest.mark.parametrize("kind", sorted(PG_VALUES))
def test_pg_encoded_arrays_reach_the_server_as_psycopg_lists_do(pg_url: str, kind: str) -> None:
    from driftline.storage import pgarrays

    eng = create_engine(pg_url)
    sql_type = {"int4": "int"}.get(kind, kind)

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.function_scoped_fixture])
    @given(st.lists(st.one_of(st.none(), PG_VALUES[kind]), max_size=40))
    def check(values: list[Any]) -> None:
        def fetch(param: Any) -> Any:
            with eng.connect() as conn:
                pgarrays.register(conn.connection.driver_connection)
                return conn.exec_driver_sql(f"SELECT (%b::{sql_type}[])::text", (param,)).scalar_one()
        _same(lambda: fetch(pgarrays.encode(list(values), kind, True)), lambda: fetch(list(values)))

    check()
    eng.dispose()


def test_sqlite_adapters_bind_bool_and_none_as_sqlite_stores_them() -> None:
    """With driftline's adapters a bool is bound as its integer and None as NULL, exactly as pysqlite binds them
    without an adapter (only cheaper): the values read back, and their storage classes, are unchanged."""
    import sqlite3

    from driftline.storage.sqlite_binding import register_adapters

    rows = [(1, True, None, 0.5, "x"), (2, False, 3, None, None)]

    def stored() -> list[tuple[object, ...]]:
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE TABLE t (a INTEGER, b BOOLEAN, c SMALLINT, d FLOAT, e TEXT)")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", rows)
        out = conn.execute("SELECT a, b, c, d, e, typeof(b), typeof(c), typeof(d), typeof(e) FROM t ORDER BY a")
        return out.fetchall()

    register_adapters()
    assert stored() == [(1, 1, None, 0.5, "x", "integer", "null", "real", "text"),
                        (2, 0, 3, None, None, "integer", "integer", "null", "null")]
