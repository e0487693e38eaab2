"""The batch paths of feature histograms (column-wise) and feature samples (grouped with numpy, hashed in one
pass) equal their per-event reference rules on dirty input: mixed types per name, nulls, booleans, ints past 2**53, huge floats, NaN and infinities, missing keys,
long strings, undeclared names, more names than max_features; including the order of every dict they build (the
encoded bucket and sample bytes follow it)."""

from __future__ import annotations

import warnings
from collections import Counter, defaultdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.core.engine import DEFAULT_VARIANT, DEFAULT_VERSION, EngineSettings
from driftline.core.events import Decoded, Outcome, Prediction
from driftline.core.feature_hists import _ABSENT, _exact_bucket, feature_hists
from driftline.core.sample import (MAX_TAU, encode_sample, id_hash, id_hashes, sample_of, sample_row, sample_rows,
                                   sample_sorted, smallest_distinct)
from driftline.core.stats import BucketStats
from driftline.ingest.sampling import batch_samples

from test_engine_properties import assert_same

FLOAT_MAX = 1.7976931348623157e308
NUMBERS = st.one_of(st.integers(-2**64, 2**64), st.sampled_from([2**53 + 1, -(2**63) - 1, 10**300, -10**300, 0]),
                    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([-0.0, 1e308, -1e-320]))
STRINGS = st.one_of(st.sampled_from(["FR", "DE", "", "true", "x" * 64, "y" * 65, "z" * 200, "w" * 201]),
                    st.text(max_size=5))
DIRTY = st.one_of(st.none(), st.booleans(), NUMBERS, STRINGS)
NAMES = st.sampled_from(["a", "b", "c", "d", "e"])


def _column(draw: Any) -> st.SearchStrategy[Any]:
    """The values one name takes across a batch: one plain type, with or without nulls, or anything."""
    return draw(st.sampled_from([
        st.floats(-1e9, 1e9), st.integers(-10**6, 10**6), st.one_of(st.floats(-1e9, 1e9), st.integers(-9, 9)),
        st.sampled_from(["FR", "DE", "IT"]), st.booleans(), STRINGS, NUMBERS,
        st.one_of(st.none(), st.floats(-1e9, 1e9)), st.one_of(st.none(), st.sampled_from(["FR", "DE"])),
        st.one_of(st.none(), st.booleans()), st.none(), DIRTY]))


@st.composite
def feature_batches(draw: Any) -> tuple[list[int], list[dict[str, Any]], tuple[str, ...], int]:
    n = draw(st.integers(1, 40))
    buckets = [draw(st.integers(0, 5)) for _ in range(n)]
    shape = draw(st.sampled_from(["uniform", "shuffled", "holes", "free"]))
    names = draw(st.lists(NAMES, unique=True, max_size=5))
    columns = {name: _column(draw) for name in names}
    dicts: list[dict[str, Any]] = []
    for _ in range(n):
        if shape == "free":
            dicts.append(draw(st.dictionaries(NAMES, DIRTY, max_size=5)))
            continue
        order = draw(st.permutations(names)) if shape == "shuffled" else names
        dicts.append({name: draw(columns[name]) for name in order
                      if shape != "holes" or draw(st.integers(0, 4))})
    declared = draw(st.sampled_from([(), ("a", "b"), ("a", "b", "c", "d", "e"), ("z",), ("e", "a", "z")]))
    max_features = draw(st.sampled_from([50, 5, 2]))
    return buckets, dicts, declared, max_features


def _names_order(buckets: list[int], dicts: list[dict[str, Any]], declared: tuple[str, ...]) -> list[str]:
    """The order the batch path attaches feature names in: declared first, then the others as met bucket by
    bucket (buckets in order of first appearance)."""
    per: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for b, d in zip(buckets, dicts):
        per[b].append(d)
    seen = dict.fromkeys(n for lst in per.values() for d in lst for n in d)
    return [*declared, *(n for n in seen if n not in declared)]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(feature_batches())
def test_feature_histograms_equal_the_exact_rule_on_dirty_dicts(case: Any) -> None:
    buckets, dicts, declared, max_features = case
    fast = [BucketStats() for _ in range(6)]
    ref = [BucketStats() for _ in range(6)]
    fast_counts: Counter[tuple[str, str]] = Counter()
    ref_counts: Counter[tuple[str, str]] = Counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN and infinities cast to a bin index
        feature_hists(buckets, dicts, declared, max_features, fast, fast_counts)
        for b in range(6):
            mine = [d for bb, d in zip(buckets, dicts) if bb == b]
            if mine:
                _exact_bucket(mine, declared, max_features, ref[b], ref_counts)
    assert fast_counts == ref_counts
    order = _names_order(buckets, dicts, declared)
    for f, r in zip(fast, ref):
        assert_same(f, r)
        for name, fh in f.features.items():  # each dict in the same order as the reference builds it
            assert list(fh.num.items()) == list(r.features[name].num.items())
            assert list(fh.cat.items()) == list(r.features[name].cat.items())
        if not ref_counts:  # no refusal: the batch path's name order
            assert list(f.features) == [n for n in order if n in f.features]
        assert f.to_bytes() == BucketStats.from_bytes(f.to_bytes()).to_bytes()


def _same_rows(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    """Rows equal name by name, in the same name order, with the same float bits (-0.0 is not 0.0)."""
    assert [repr(list(r.items())) for r in a] == [repr(list(r.items())) for r in b]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(feature_batches(), st.sampled_from([None, {}, object(), [1.5], 1e400, "é" * 65]))
def test_sample_rows_equal_sample_row_and_share_no_dict(case: Any, odd: object) -> None:
    """The batch path of sample rows: the rows sample_row builds (same names, order and float bits, dirty values
    and more names than max_features included), each a new dict: changing a row leaves the event's dict alone."""
    _, dicts, declared, max_features = case
    features: list[dict[str, Any] | None] = [*dicts, None, {"e": odd, **(dicts[0] if dicts else {})}]
    before = [None if f is None else list(f.items()) for f in features]
    rows = sample_rows(features, declared, max_features)
    _same_rows(rows, [sample_row(f, declared, max_features) for f in features])
    for row, f, was in zip(rows, features, before):
        assert row is not f
        row["zz"] = 1.0
        assert (None if f is None else list(f.items())) == was


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(feature_batches(), st.sampled_from([MAX_TAU, 7]))
def test_encode_and_decode_sample_equal_the_column_by_column_rule(case: Any, tau: int) -> None:
    """encode_sample's bytes are the reference encoding's (columns by dict.get), rows with and without missing
    names, none or one name included; decode_sample gives back the rows, in name order and float bits."""
    import msgspec
    from itertools import chain, repeat

    from driftline.core.sample import FeatureSample, decode_sample

    _, dicts, declared, max_features = case
    rows = [sample_row(f, declared, max_features) for f in dicts]
    s = FeatureSample(tau, tuple(range(len(rows))), tuple(rows))
    names = sorted(set(chain.from_iterable(rows)))
    cols = [list(map(dict.get, rows, repeat(n))) for n in names]
    ref = msgspec.msgpack.encode({"tau": tau, "h": list(s.hashes), "f": names, "v": cols})
    assert encode_sample(s) == ref
    back = decode_sample(ref)
    assert back == s and back.tau == tau
    _same_rows(list(back.rows), [{n: r[n] for n in names if n in r} for r in rows])


@given(st.lists(st.one_of(st.text(), st.sampled_from(["", "\ud800x", "p-1", "é" * 300])), max_size=30))
def test_id_hashes_equal_id_hash(ids: list[str]) -> None:
    assert id_hashes(ids).tolist() == [id_hash(p) for p in ids]


@given(st.lists(st.tuples(st.integers(0, 40), st.dictionaries(NAMES, st.floats(0, 9), max_size=2)), max_size=30),
       st.integers(1, 12), st.sampled_from([MAX_TAU, 20, 0]))
def test_sample_sorted_equals_sample_of(items: list[tuple[int, dict[str, Any]]], k: int, tau: int) -> None:
    items.sort(key=lambda item: item[0])
    hashes, rows = [h for h, _ in items], [r for _, r in items]
    assert sample_sorted(hashes, rows, k, tau) == sample_of(items, k, tau)
    cand = smallest_distinct(items, k)
    assert cand.items == items[:len(cand.items)] and cand.cut == (len({h for h, _ in items}) > k)


@given(st.lists(st.tuples(st.sampled_from([MAX_TAU, 30, 12, 0]),
                          st.lists(st.tuples(st.integers(0, 40), st.dictionaries(NAMES, st.floats(0, 9), max_size=2)),
                                   max_size=12)), max_size=4),
       st.integers(1, 12))
def test_merge_samples_equals_the_sample_of_every_row(parts: list[Any], k: int) -> None:
    """merge_samples (rows sorted by hash, taken as they are when distinct and at most k) is the sample of all
    the samples' rows under the smallest threshold: overlapping, duplicated and cut samples included."""
    from driftline.core.sample import FeatureSample, merge_samples

    samples = [sample_of(items, 12, tau) for tau, items in parts]
    samples += [FeatureSample(tau, tuple(h for h, _ in items), tuple(r for _, r in items))  # unsorted as well
                for tau, items in parts]
    if not samples:
        assert merge_samples(samples, k) == FeatureSample.empty()
        return
    tau = min(s.tau for s in samples)
    ref = sample_of(((h, r) for s in samples for h, r in zip(s.hashes, s.rows)), k, tau)
    got = merge_samples(samples, k)
    assert got == ref
    _same_rows(list(got.rows), list(ref.rows))


def _reference_batch_samples(s: EngineSettings, events: list[Decoded], k: int) -> dict[Any, Any]:
    """batch_samples as it was, event by event."""
    offered: dict[Any, list[tuple[int, int]]] = defaultdict(list)
    for i, d in enumerate(events):
        ev = d.event
        if isinstance(ev, Prediction):
            key = (ev.model, ev.model_version or DEFAULT_VERSION, ev.variant or DEFAULT_VARIANT,
                   int(d.ts // s.bucket_s) * s.bucket_s)
            offered[key].append((id_hash(ev.prediction_id), i))
    out = {}
    for key, items in offered.items():
        items.sort()
        cand = smallest_distinct(items, k)
        tau = cand.items[-1][0] if cand.cut else MAX_TAU
        out[key] = sample_of(((h, sample_row(events[i].event.features, s.declared_features,  # type: ignore
                                             s.max_features)) for h, i in cand.items), k, tau)
    return out


@st.composite
def event_batches(draw: Any) -> tuple[list[Decoded], list[str], int]:
    _, dicts, declared, max_features = draw(feature_batches())
    events = []
    for i, feats in enumerate(dicts):
        ts = draw(st.one_of(st.integers(0, 4).map(lambda h: h * 1800.0), st.floats(0, 4 * 3600),
                            st.floats(0, 253402300799.0), st.sampled_from([3600.0 - 1e-9, 7200.0, 1e-300])))
        pid = f"p{draw(st.integers(0, len(dicts)))}"  # repeated ids: one hash, several rows
        if draw(st.integers(0, 5)) == 0:
            events.append(Decoded(Outcome(pid, 1, ts), ts))
        events.append(Decoded(Prediction(pid, "m", ts, 0.5, variant=draw(st.sampled_from([None, "B"])),
                                         features=feats if draw(st.integers(0, 9)) else None), ts))
    return events, list(declared), max_features


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event_batches(), st.sampled_from([1, 2, 3, 256]))
def test_batch_samples_equal_the_event_by_event_rule(case: Any, k: int) -> None:
    events, declared, max_features = case
    s = EngineSettings(declared_features=tuple(declared), max_features=max_features)
    fast, ref = batch_samples(s, events, k), _reference_batch_samples(s, events, k)
    assert list(fast) == list(ref)
    for key in ref:
        assert fast[key] == ref[key]
        _same_rows(list(fast[key].rows), list(ref[key].rows))
        assert encode_sample(fast[key]) == encode_sample(ref[key])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(feature_batches(), st.sampled_from([object(), [1], {"x": 1}]))
def test_a_value_of_no_feature_type_fails_as_the_exact_rule_does(case: Any, odd: object) -> None:
    """A value that is no feature value (only a bug upstream makes one) raises in the batch path wherever the
    reference rule raises, so the batch's isolation traces it to its record; a bare object is never taken for
    an absent name."""
    buckets, dicts, declared, max_features = case
    dicts = [dict(d, a=odd) for d in dicts]
    outcomes = []
    for run in (lambda: feature_hists(buckets, dicts, declared, max_features, [BucketStats() for _ in range(6)],
                                      Counter()),
                lambda: [_exact_bucket([d for bb, d in zip(buckets, dicts) if bb == b], declared, max_features,
                                       BucketStats(), Counter()) for b in sorted(set(buckets))]):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                run()
            outcomes.append(None)
        except TypeError:
            outcomes.append(TypeError)
    assert outcomes[0] == outcomes[1]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(feature_batches())
def test_a_repeated_declared_name_is_counted_as_the_per_value_rule_counts_it(case: Any) -> None:
    """A name declared twice (the config's mapping rules it out) is processed twice, as before: the general
    per-value rule applied once per occurrence, values replaced and missing counts added."""
    from driftline.core.feature_hists import _Batch, _general

    buckets, dicts, _, _ = case
    declared = ("a", "b", "a")
    if any(set(d) - {"a", "b"} for d in dicts):
        return  # undeclared names: the exact rule applies, as for any refusal
    fast = [BucketStats() for _ in range(6)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        feature_hists(buckets, dicts, declared, 50, fast, Counter())
        ref = [BucketStats() for _ in range(6)]
        batch = _Batch(buckets, ref, True)
        for name in declared:
            _general(name, [d.get(name, _ABSENT) for d in dicts], batch)
    for f, r in zip(fast, ref):
        assert_same(f, r)
        assert list(f.features) == list(r.features)


def test_a_stored_sample_whose_columns_do_not_match_its_hashes_is_refused() -> None:
    """decode_sample zips the stored columns: a blob with a short column must raise, not come back cut short."""
    import msgspec
    import pytest

    from driftline.core.sample import decode_sample

    blob = msgspec.msgpack.encode({"tau": 9, "h": [1, 2, 3], "f": ["a"], "v": [[0.5, 1.5]]})
    with pytest.raises(ValueError, match="corrupt feature sample"):
        decode_sample(blob)
    ok = msgspec.msgpack.encode({"tau": 9, "h": [1, 2], "f": ["a"], "v": [[0.5, None]]})
    assert decode_sample(ok).rows == ({"a": 0.5}, {})
