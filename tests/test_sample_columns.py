"""The column route of feature samples (core/sample_columns.py, ingest/sampling.batch_columns, storage merge_into)
and the one per-value rule (sample.sample_values) against verbatim frozen copies of the row route they replace
(sample_row, sample_rows, batch_samples as of main 1836535): same rows (names, order, float bits), same errors,
same stored bytes, on dirty features (None, {}, NaN, infinities, huge ints, booleans, long strings, odd objects,
more names than max_features, mixed types per name across rows, repeated ids) and dirty stored samples.
Run with CI=true as well (derandomized examples)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, repeat
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.core.engine import EngineSettings
from driftline.core.events import Decoded, Prediction
from driftline.core.sample import (MAX_TAU, MAX_VALUE_LEN, FeatureSample, Row, decode_sample, encode_sample,
                                   id_hashes, merge_samples, sample_of, sample_row, sample_rows, sample_sorted,
                                   sample_values, smallest_distinct)
from driftline.core.sample_columns import SampleColumns, encoded, merged_encoded
from driftline.ingest.sampling import _series, batch_columns, batch_samples
from driftline.storage.samples import SampleKey, feature_samples, merge_into
from driftline.storage.store import Store

from test_feature_fast_paths import DIRTY, NAMES, STRINGS, _same_rows, event_batches, feature_batches

_ID, _TS = attrgetter("prediction_id"), attrgetter("ts")
"""The reference grouping's field readers (sampling itself reads them with comprehensions)."""

# ---- verbatim frozen copies of the row route (main 1836535), renamed ----


def frozen_sample_row(features: Mapping[str, object] | None, keep: Sequence[str], max_features: int) -> Row:
    """The sampled form of a prediction's features: the declared names `keep` first, then the others by name,
    at most `max_features`; numbers as floats, booleans and strings as categories, null and non-finite left out
    (missing)."""
    if not features:
        return {}
    names: Iterable[str] = features
    if len(features) > max_features:
        declared = set(keep)
        chosen = [n for n in keep if n in features]
        names = (chosen + sorted(n for n in features if n not in declared))[:max_features]
    row: Row = {}
    for name in names:
        v = features[name]
        t = type(v)
        if t is float:
            if math.isfinite(v):  # type: ignore[arg-type]
                row[name] = v  # type: ignore[assignment]
        elif t is str:
            row[name] = v[:MAX_VALUE_LEN]  # type: ignore[index]
        elif t is bool:
            row[name] = "true" if v else "false"
        elif t is int:
            row[name] = float(v)  # type: ignore[arg-type]
    return row


def frozen_sample_rows(features: Iterable[Mapping[str, object] | None], keep: Sequence[str], max_features: int
                ) -> list[Row]:
    """[sample_row(f, keep, max_features) for f in features], cheaper for a dict of at most max_features names
    (the common case): a copy of it with only the values sample_row changes or leaves out fixed, in one loop
    (same rows, same key order; the event's dict is never shared with its row)."""
    rows: list[Row] = []
    for f in features:
        if not f or len(f) > max_features:
            rows.append(frozen_sample_row(f, keep, max_features))
            continue
        row: dict[str, Any] = dict(f)
        for name, v in f.items():
            t = type(v)
            if t is float:
                if not math.isfinite(v):  # type: ignore[arg-type]
                    del row[name]
            elif t is str:
                if len(v) > MAX_VALUE_LEN:  # type: ignore[arg-type]
                    row[name] = v[:MAX_VALUE_LEN]  # type: ignore[index]
            elif t is bool:
                row[name] = "true" if v else "false"
            elif t is int:
                row[name] = float(v)  # type: ignore[arg-type]
            else:
                del row[name]
        rows.append(row)
    return rows


def frozen_batch_samples(settings: EngineSettings, events: Sequence[Decoded], k: int) -> dict[SampleKey, FeatureSample]:
    """Per bucket, the sample of the given events' predictions (outcomes are skipped). Feature rows are built
    only for the candidates: the predictions holding one of a bucket's k smallest hashes.

    The predictions are grouped with numpy: one stable sort by (model/version/variant, bucket start, hash) puts
    each bucket's (hash, position) pairs in the order sorting them would; buckets come in order of first sight."""
    preds = [d for d in events if isinstance(d.event, Prediction)]
    if not preds:
        return {}
    evs: list[Prediction] = [d.event for d in preds]  # type: ignore[misc]
    n = len(preds)
    hashes = id_hashes(map(_ID, evs)).astype(np.uint64)
    bs = settings.bucket_s
    starts = np.floor_divide(np.fromiter(map(_TS, preds), dtype=np.float64, count=n), bs).astype(np.int64) * bs
    groups, codes = _series(evs)
    order = np.lexsort((hashes, starts, codes))
    runs = np.flatnonzero(np.r_[True, (np.diff(codes[order]) != 0) | (np.diff(starts[order]) != 0)])
    ends = np.r_[runs[1:], n].tolist()
    firsts = np.minimum.reduceat(order, runs)
    hs, at, st, gs = hashes[order].tolist(), order.tolist(), starts[order].tolist(), codes[order].tolist()
    chosen: list[tuple[SampleKey, list[int], list[int], int]] = []
    for r in np.argsort(firsts, kind="stable").tolist():
        a, e = int(runs[r]), ends[r]
        key = (*groups[gs[a]], st[a])
        if e - a <= k:  # at most k predictions: every one is a candidate
            chosen.append((key, hs[a:e], at[a:e], MAX_TAU))  # type: ignore[arg-type]
            continue
        cand = smallest_distinct(list(zip(hs[a:e], at[a:e])), k)
        tau = cand.items[-1][0] if cand.cut else MAX_TAU
        chosen.append((key, [h for h, _ in cand.items], [i for _, i in cand.items], tau))  # type: ignore[arg-type]
    keep, most = settings.declared_features, settings.max_features
    rows = frozen_sample_rows([evs[i].features for _, _, idx, _ in chosen for i in idx], keep, most)
    out: dict[SampleKey, FeatureSample] = {}
    done = 0
    for key, hl, idx, tau in chosen:
        out[key] = sample_sorted(hl, rows[done:done + len(idx)], k, tau)
        done += len(idx)
    return out


class _FrozenStored(msgspec.Struct):
    tau: int
    h: list[int]
    f: list[str]
    v: list[list[float | str | None]]


_frozen_dec = msgspec.msgpack.Decoder(_FrozenStored)


def frozen_decode_sample(data: bytes) -> FeatureSample:
    """The sample stored by encode_sample (a row without a missing value built in one call)."""
    s = _frozen_dec.decode(data)
    if len(s.v) != len(s.f) or any(len(col) != len(s.h) for col in s.v):
        raise ValueError(f"corrupt feature sample: {len(s.f)} names, {len(s.v)} columns, {len(s.h)} hashes, "
                         f"column lengths {sorted({len(col) for col in s.v})}")
    if not s.f:
        return FeatureSample(s.tau, tuple(s.h), tuple({} for _ in s.h))
    return FeatureSample(s.tau, tuple(s.h), tuple(dict(zip(s.f, vals)) if None not in vals else
                                                  {n: v for n, v in zip(s.f, vals) if v is not None}
                                                  for vals in zip(*s.v)))



# ---- references built from the frozen copies ----


def ref_encode(s: FeatureSample) -> bytes:
    """encode_sample's document built the plainest way: sorted names of the rows, a column per name by dict.get."""
    names = sorted(set(chain.from_iterable(s.rows)))
    return msgspec.msgpack.encode({"tau": s.tau, "h": list(s.hashes), "f": names,
                                   "v": [list(map(dict.get, s.rows, repeat(n))) for n in names]})


def ref_merged(old: bytes, delta: FeatureSample, k: int) -> bytes:
    """The bytes merge_into stored for a bucket with a stored sample, as of main."""
    return ref_encode(merge_samples((frozen_decode_sample(old), delta), k))


def _outcome(run: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", result) or ("raised", exception type and message)."""
    try:
        return "ok", run()
    except Exception as err:  # noqa: BLE001 - compared, not hidden
        return "raised", (type(err), str(err))


ODD = st.sampled_from([object(), [1.5], {"x": 1}, b"ab", 1e400, -1e400, math.nan, -0.0, 2**53 + 1, 10**300,
                       -(2**63), "é" * 65, "x" * 64, "true", 5e-324])
VALUES = st.one_of(DIRTY, ODD)
MANY_NAMES = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "Z", "aa", ""])


@st.composite
def dirty_features(draw: Any) -> tuple[list[Any], tuple[str, ...], int]:
    """A batch of feature dicts: typed columns (feature_batches) with odd values, nulls and more names mixed in,
    some events without features or with {} (and a rare int too large for a float)."""
    _, dicts, declared, max_features = draw(feature_batches())
    out: list[Any] = []
    for d in dicts:
        d = dict(d)
        for _ in range(draw(st.integers(0, 3))):
            d[draw(MANY_NAMES)] = draw(VALUES)
        if draw(st.integers(0, 60)) == 0:
            d[draw(MANY_NAMES)] = 10**400
        out.append(draw(st.sampled_from([d, d, d, d, None, {}])))
    return out, declared, max_features


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dirty_features())
def test_sample_row_and_sample_rows_equal_the_frozen_rules(case: Any) -> None:
    """sample_row (now through sample_values, a column of one type per call) and sample_rows (a column per name)
    give the frozen copies' rows (names, order, float bits), or raise what they raise; rows are new dicts."""
    features, declared, max_features = case
    for f in features:
        got = _outcome(lambda: sample_row(f, declared, max_features))
        ref = _outcome(lambda: frozen_sample_row(f, declared, max_features))
        assert got[0] == ref[0] and (got[1] == ref[1] if got[0] == "raised" else True)
        if got[0] == "ok":
            _same_rows([got[1]], [ref[1]])
    got = _outcome(lambda: sample_rows(features, declared, max_features))
    ref = _outcome(lambda: frozen_sample_rows(features, declared, max_features))
    assert got[0] == ref[0]
    if got[0] == "raised":
        assert got[1] == ref[1]
        return
    _same_rows(got[1], ref[1])
    for row, f in zip(got[1], features):
        assert row is not f


TYPED = st.sampled_from([st.floats(), st.integers(-2**64, 2**64), STRINGS, st.booleans(), st.sampled_from([0.0, -0.0]),
                         st.sampled_from(["", "x" * 65]), st.just(10**400)])


@settings(max_examples=500)
@given(st.one_of(st.lists(VALUES, max_size=30),
                 TYPED.flatmap(lambda t: st.lists(t, max_size=30)),
                 TYPED.flatmap(lambda t: st.lists(st.one_of(st.none(), t), max_size=30))))
def test_sample_values_is_the_per_value_rule(vals: list[Any]) -> None:
    """sample_values of a column, mixed types included, is the frozen per-value rule value by value (None where
    the value is left out), or raises what it raises."""
    def per_value() -> list[Any]:
        """The frozen rule applied to one value at a time."""
        return [frozen_sample_row({"n": v}, (), 50).get("n") for v in vals]
    got, ref = _outcome(lambda: sample_values(vals)), _outcome(per_value)
    assert repr(got) == repr(ref) if got[0] == "ok" else got[1] == ref[1]


@st.composite
def dirty_events(draw: Any) -> tuple[list[Decoded], tuple[str, ...], int]:
    """event_batches (repeated ids, outcomes, events without features, several buckets and variants) with odd
    values and extra names mixed into the features."""
    events, declared, max_features = draw(event_batches())
    out = []
    for d in events:
        ev = d.event
        if isinstance(ev, Prediction) and ev.features is not None and draw(st.booleans()):
            feats = dict(ev.features)
            for _ in range(draw(st.integers(1, 3))):
                feats[draw(MANY_NAMES)] = draw(VALUES)
            d = Decoded(Prediction(ev.prediction_id, ev.model, ev.ts, ev.score, variant=ev.variant,
                                   features=feats), d.ts)
        out.append(d)
    return out, tuple(declared), max_features


def _as_sample(s: SampleColumns | FeatureSample) -> FeatureSample:
    """The sample as rows, whichever form batch_columns gave it in."""
    return s.to_sample() if isinstance(s, SampleColumns) else s


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dirty_events(), st.sampled_from([1, 2, 3, 5, 256]))
def test_batch_columns_encode_as_the_frozen_batch_samples(case: Any, k: int) -> None:
    """Per bucket, the column route's bytes (and sample) are the frozen row route's; batch_samples' rows are its
    rows in name order and float bits."""
    events, declared, max_features = case
    s = EngineSettings(declared_features=declared, max_features=max_features)
    ref = _outcome(lambda: frozen_batch_samples(s, events, k))
    fast = _outcome(lambda: batch_columns(s, events, k))
    rows = _outcome(lambda: batch_samples(s, events, k))
    assert fast[0] == ref[0] == rows[0]
    if ref[0] == "raised":
        assert fast[1] == ref[1] == rows[1]
        return
    assert list(fast[1]) == list(ref[1]) == list(rows[1])
    for key, want in ref[1].items():
        assert encoded(fast[1][key]) == ref_encode(want) == encode_sample(want)
        assert _as_sample(fast[1][key]) == want
        assert rows[1][key] == want
        _same_rows(list(rows[1][key].rows), list(want.rows))


SAMPLED = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(["FR", "", "x" * 64, "true"]),
                    st.sampled_from([-0.0, 0.0, 5e-324, 1e308]))
ROWS = st.dictionaries(NAMES, SAMPLED, max_size=4)


@st.composite
def stored_blobs(draw: Any) -> bytes:
    """A stored sample: encode_sample's (sample_of of rows with colliding hashes, cut or not), or a hand-made
    document whose names are unsorted, repeated, or hold no value at all (None in every row)."""
    items = draw(st.lists(st.tuples(st.integers(0, 60), ROWS), max_size=10))
    tau = draw(st.sampled_from([MAX_TAU, 40, 20, 0]))
    s = sample_of(items, draw(st.integers(1, 12)), tau)
    if draw(st.integers(0, 3)):
        return encode_sample(s)
    names = draw(st.lists(NAMES, max_size=4))
    cols = [[draw(st.one_of(st.none(), SAMPLED)) for _ in s.hashes] for _ in names]
    return msgspec.msgpack.encode({"tau": s.tau, "h": list(s.hashes), "f": names, "v": cols})


@st.composite
def deltas(draw: Any) -> tuple[SampleColumns, FeatureSample]:
    """A batch's bucket sample with distinct hashes, as columns (bucket_columns' form) and as rows."""
    hashes = sorted(draw(st.sets(st.integers(0, 60), min_size=1, max_size=10)))
    rows = [draw(ROWS) for _ in hashes]
    tau = draw(st.sampled_from([MAX_TAU, hashes[-1]]))
    names = sorted(set(chain.from_iterable(rows)))
    cols = [list(map(dict.get, rows, repeat(n))) for n in names]
    return SampleColumns(tau, hashes, names, cols), FeatureSample(tau, tuple(hashes), tuple(rows))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stored_blobs(), deltas(), st.integers(1, 24))
def test_merged_encoded_equals_the_frozen_merge(old: bytes, delta: Any, k: int) -> None:
    """A bucket sample merged into a stored one from columns gives the frozen route's bytes: overlapping and
    repeated hashes, hashes above either threshold, more than k rows, names without values included."""
    cols, rows = delta
    want = ref_merged(old, rows, k)
    assert merged_encoded(old, cols, k) == want
    assert merged_encoded(old, rows, k) == want
    assert decode_sample(want) == frozen_decode_sample(want)


def test_a_corrupt_stored_sample_raises_on_both_routes() -> None:
    """A stored blob with a short column raises the same ValueError on the column route as on the row route."""
    blob = msgspec.msgpack.encode({"tau": 9, "h": [1, 2, 3], "f": ["a"], "v": [[0.5, 1.5]]})
    cols = SampleColumns(MAX_TAU, [4], ["a"], [[1.0]])
    got = _outcome(lambda: merged_encoded(blob, cols, 10))
    assert got[0] == "raised" and got == _outcome(lambda: ref_merged(blob, cols.to_sample(), 10))


def _stored(store: Store) -> dict[Any, bytes]:
    """Every stored bucket sample's bytes by key."""
    c = feature_samples.c
    with store.read() as conn:
        return {(r.model, r.model_version, r.variant, int(r.bucket_start)): bytes(r.data)
                for r in conn.execute(feature_samples.select().order_by(c.model, c.model_version, c.variant,
                                                                         c.bucket_start))}


def _check_batches_through_merge_into(store: Store) -> None:
    """Batches recorded through batch_columns + merge_into store the bytes the frozen route computes batch by
    batch (new buckets encoded, stored ones decoded, merged and encoded again)."""

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(dirty_events(), st.sampled_from([1, 3, 256]), st.lists(st.integers(1, 12), min_size=1, max_size=3))
    def run(case: Any, k: int, cuts: list[int]) -> None:
        events, declared, max_features = case
        s = EngineSettings(declared_features=declared, max_features=max_features)
        with store.write() as conn:
            conn.execute(feature_samples.delete())
        want: dict[Any, bytes] = {}
        bounds = sorted({0, len(events), *[min(c, len(events)) for c in cuts]})
        for lo, hi in zip(bounds, bounds[1:]):
            batch = events[lo:hi]
            try:
                ref = frozen_batch_samples(s, batch, k)
            except OverflowError:
                return  # an int too large for a float fails the batch on both routes (test above)
            for key, delta in ref.items():
                want[key] = ref_encode(delta) if key not in want else ref_merged(want[key], delta, k)
            with store.write() as conn:
                merge_into(conn, batch_columns(s, batch, k), k, s.bucket_s)
        assert _stored(store) == want

    run()


def test_batches_through_merge_into_store_the_frozen_bytes_on_sqlite(tmp_path: Any) -> None:
    """The recording path on SQLite (one writer: new rows inserted without a conflict check)."""
    store = Store(f"sqlite:///{tmp_path}/s.db")
    store.migrate()
    _check_batches_through_merge_into(store)
    store.close()


def test_batches_through_merge_into_store_the_frozen_bytes_on_postgresql(pg_url: str) -> None:
    """The recording path on PostgreSQL (rows locked, new rows inserted with ON CONFLICT DO NOTHING)."""
    store = Store(pg_url)
    store.migrate()
    _check_batches_through_merge_into(store)
    store.close()
