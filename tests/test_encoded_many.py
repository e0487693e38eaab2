"""The store's chunk-wide bucket writes (core/encoded_many.encode_merged) give exactly the bytes of the per-bucket
route they replace, `d.to_bytes() if old is None else add_encoded(old, d)` (add_encoded frozen below as it was),
on engine deltas and on clean, dirty and malformed stored buckets, or fail alike."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.core.encoded import _add_score_bins
from driftline.core.feature_blob import _add_feature_bins
from driftline.core.encoded_many import encode_merged
from driftline.core.engine import Engine, EngineSettings, JoinView
from driftline.core.grids import N_DELAY_BINS
from driftline.core.stats import BucketStats, _feature_doc

from helpers import decoded, outcome, pred
from test_engine_properties import T0
from test_store_fastpaths import _ref_to_bytes, _same, buckets, ref_range_into, ref_rank_into

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _frozen_add_encoded(data: bytes, delta: BucketStats) -> bytes:
    """core/encoded.add_encoded before encoded_many (verbatim), plus the ranking histogram's reference sum."""
    doc = msgspec.msgpack.decode(data)
    feats = doc["f"]
    if any(not (isinstance(num, list) and len(num) == 2 and isinstance(num[0], bytes)) for num, _, _ in
           feats.values()):
        return BucketStats.from_bytes(data).add(delta).to_bytes()  # an older encoding: the general route
    doc["conf"] = (np.asarray(doc["conf"], dtype=np.int64) + delta.conf.ravel()).tolist()
    doc["sums"] = (np.asarray(doc["sums"], dtype=np.float64) + delta.sums.ravel()).tolist()
    doc["hi"], doc["hc"], doc["hp"] = _add_score_bins(doc["hi"], doc["hc"], doc["hp"], delta)
    if delta.delay.any():
        delay = delta.delay.copy()
        delay[np.frombuffer(doc["di"], dtype=np.int32)] += np.frombuffer(doc["dc"], dtype=np.int64)
        dnz = np.flatnonzero(delay)
        doc["di"], doc["dc"] = dnz.astype(np.int32).tobytes(), delay[dnz].tobytes()
    for name, fh in delta.features.items():
        old = feats.get(name)
        if old is None:
            feats[name] = _feature_doc(fh)
            continue
        fh.unpack()
        if fh.num:
            old[0] = _add_feature_bins(old[0][0], old[0][1], fh.num)
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
    ref_rank_into(doc, delta, data)  # added with the ranking histograms (the verbatim part above is unchanged)
    ref_range_into(doc, delta, data)  # and with the flag ranges
    return msgspec.msgpack.encode(doc)


def _frozen_route(olds: list[bytes | None], deltas: list[BucketStats]) -> list[bytes]:
    """storage/bulk._merge_chunk's per-bucket encoding before encoded_many (verbatim but for names)."""
    return [d.to_bytes() if old is None else _frozen_add_encoded(old, d) for old, d in zip(olds, deltas)]


def _engine_batch(draw: Any, n_max: int) -> list[BucketStats]:
    """The bucket deltas of one engine batch: predictions over a few hours (numeric, categorical, null and absent
    features, slices), outcomes before and after them, relabels, so delays and sign-cancelling cells occur."""
    eng = Engine(EngineSettings(slice_features=("country",)), JoinView())
    raws = []
    for _ in range(draw(st.integers(0, n_max))):
        pid = f"p{draw(st.integers(0, 15))}"
        ts = T0 + draw(st.integers(0, 4 * 3600))
        if draw(st.booleans()):
            feats = {"amount": draw(st.one_of(st.floats(-1e5, 1e5, allow_nan=False), st.none()))}
            if draw(st.booleans()):
                feats["country"] = draw(st.sampled_from(["FR", "DE", None, "x" * 3]))
            own = draw(st.sampled_from([{}, {"threshold": 0.3}, {"threshold": 0.7}]))  # flag ranges
            raws.append(pred(pid, draw(st.sampled_from([0.0, 0.5, 1.0, 0.3]) | st.floats(0, 1, allow_nan=False)),
                             ts, variant=draw(st.sampled_from(["A", "B"])), features=feats, **own))
        else:
            raws.append(outcome(pid, draw(st.integers(0, 1)), ts))
    for d in decoded(raws):
        eng.apply(d)
    return list(eng.finish().deltas.values())


def _malformed(draw: Any, data: bytes) -> bytes:
    """A stored bucket made dirty the ways the per-bucket routes guard against."""
    doc = msgspec.msgpack.decode(data)
    how = draw(st.integers(0, 12))
    if how == 0:  # repeated score bins
        doc["hi"], doc["hc"], doc["hp"] = doc["hi"] * 2, doc["hc"] * 2, doc["hp"] * 2
    elif how == 1:  # a negative or too large score bin
        doc["hi"] = np.asarray([draw(st.sampled_from([-1, 10**6]))], dtype=np.int32).tobytes()
        doc["hc"], doc["hp"] = np.asarray([4], dtype=np.int64).tobytes(), np.asarray([0.5]).tobytes()
    elif how == 2:  # stored counts zero and psum -0.0
        doc["hi"] = np.asarray([5], dtype=np.int32).tobytes()
        doc["hc"], doc["hp"] = np.asarray([0], dtype=np.int64).tobytes(), np.asarray([-0.0]).tobytes()
    elif how == 3:  # lengths differ
        doc["hc"] = doc["hc"] + np.asarray([1], dtype=np.int64).tobytes()
    elif how == 4:  # repeated, negative or too large delay bins
        doc["di"] = np.asarray(draw(st.sampled_from([[3, 3], [-1], [N_DELAY_BINS], [0, N_DELAY_BINS - 1]])),
                               dtype=np.int32).tobytes()
        doc["dc"] = np.ones(len(doc["di"]) // 4, dtype=np.int64).tobytes()
    elif how == 5:  # delay lengths differ
        doc["dc"] = doc["dc"] + b"\0" * 8
    elif how == 6:  # the older feature encoding (list of pairs)
        for name in doc["f"]:
            doc["f"][name][0] = [[1, 2], [3, 4]]
    elif how == 7:  # conf of another length, or a value over int64
        doc["conf"] = draw(st.sampled_from([[1, 2, 3], [2**63] + [0] * 5, [1.5] * 6, ["a"] * 6]))
    elif how == 8:  # sums odd
        doc["sums"] = draw(st.sampled_from([[0.0] * 8, ["1.5"] * 9, [1] * 9, [None] * 9]))
    elif how == 9:  # no slices key, or not a dict at all
        doc.pop("s", None)
    elif how == 10:
        doc["hi"] = "text"
    elif how == 12:  # a flag range of the wrong shape, types, order or prediction count
        doc["tr"] = draw(st.sampled_from([[0.5], "x", [0.6, 0.5, 2, 0], [1, 1, 1, 0], [0.5, 0.5, 9, 0],
                                          [0.5, 0.5, 2, 10**6], [0.5, 0.5, 2, sum(doc["conf"])]]))
    else:  # bad counts
        doc["exp"] = draw(st.sampled_from(["x", None, 2.5]))
    return msgspec.msgpack.encode(doc)


@st.composite
def chunks(draw: Any) -> tuple[list[bytes | None], list[BucketStats]]:
    """A chunk of deltas (from an engine batch, some with their known score bins dropped) and for each nothing
    stored, an earlier batch's bucket, a random bucket, or a malformed one."""
    deltas = _engine_batch(draw, 30)
    earlier = _engine_batch(draw, 20)
    olds: list[bytes | None] = []
    for i, d in enumerate(deltas):
        kind = draw(st.integers(0, 5))
        if kind == 0 or (kind == 1 and not earlier):
            olds.append(None)
        elif kind == 1:
            olds.append(earlier[i % len(earlier)].to_bytes())
        elif kind in (2, 3):
            olds.append(_ref_to_bytes(draw(buckets(dirty=False))))
        elif kind == 4:
            olds.append(_malformed(draw, _ref_to_bytes(draw(buckets(dirty=False)))))
        else:
            olds.append(d.to_bytes())
        if draw(st.integers(0, 7)) == 0:
            d.bins = None
    return olds, deltas


def _copies(deltas: list[BucketStats]) -> list[BucketStats]:
    """Copies keeping the known score bins (copy() forgets them)."""
    out = []
    for d in deltas:
        c = d.copy()
        c.bins = d.bins
        out.append(c)
    return out


@pytest.mark.slow
@SETTINGS
@given(chunks())
def test_chunk_wide_writes_equal_the_per_bucket_route(chunk: tuple[list[bytes | None], list[BucketStats]]) -> None:
    olds, deltas = chunk
    with np.errstate(all="ignore"):
        _same(lambda: encode_merged(olds, _copies(deltas)), lambda: _frozen_route(olds, _copies(deltas)))


@pytest.mark.slow
@SETTINGS
@given(chunks())
def test_each_bucket_alone_equals_the_chunk(chunk: tuple[list[bytes | None], list[BucketStats]]) -> None:
    """A chunk's bytes do not depend on which other buckets share it."""
    olds, deltas = chunk
    with np.errstate(all="ignore"):
        try:
            whole = encode_merged(olds, _copies(deltas))
        except Exception:  # noqa: BLE001 - covered by the test above
            return
        assert whole == [encode_merged([o], [d])[0] for o, d in zip(olds, _copies(deltas))]


def test_an_empty_chunk_and_deltas_without_delays() -> None:
    assert encode_merged([], []) == []
    d = BucketStats()
    d.conf[2, 1] = 1
    d.bins = d.score_bins()
    stored = d.to_bytes()
    assert encode_merged([stored, None], [d, d]) == _frozen_route([stored, None], [d, d])


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunks())
def test_merges_never_take_numpys_hash_unique(chunk: tuple[list[bytes | None], list[BucketStats]]) -> None:
    """np.unique without return_* outputs takes numpy >= 2.3's hash route for integers, 15-50x slower than a sort on
    the scattered bin indices a merge unions (5 % of a 1 M-event replay): the merges use core.unique_ints."""
    olds, deltas = chunk
    real = np.unique

    def refusing(ar: Any, *args: Any, **kwargs: Any) -> Any:
        if not args and not any(kwargs.get(k) for k in ("return_index", "return_inverse", "return_counts")):
            raise AssertionError("np.unique's hash route in a bucket merge")
        return real(ar, *args, **kwargs)

    np.unique = refusing  # type: ignore[assignment]
    try:
        with np.errstate(all="ignore"):
            try:
                encode_merged(olds, _copies(deltas))
            except AssertionError:
                raise
            except Exception:  # noqa: BLE001 - malformed stored buckets fail as the route above checks
                pass
            for old, d in zip(olds, _copies(deltas)):
                if old is not None and d.bins is not None:
                    doc = msgspec.msgpack.decode(old)
                    if isinstance(doc, dict) and {"hi", "hc", "hp"} <= doc.keys():
                        try:
                            _add_score_bins(doc["hi"], doc["hc"], doc["hp"], d)
                        except AssertionError:
                            raise
                        except Exception:  # noqa: BLE001
                            pass
    finally:
        np.unique = real  # type: ignore[assignment]


def test_a_stored_bucket_with_text_counts_fails_as_the_per_bucket_route() -> None:
    """Hypothesis in CI: a stored blob whose counts are text ("conf": ["a", …]) made the chunk route raise TypeError
    (labelled_in_conf's sum) where the per-bucket route raises ValueError (numpy's int conversion)."""
    from driftline.core.rank_hist import labelled_in_conf

    doc = msgspec.msgpack.decode(BucketStats().to_bytes())
    doc["conf"] = ["a"] * 6
    olds: list[bytes | None] = [msgspec.msgpack.encode(doc)]
    delta = BucketStats()
    delta.conf[2, 0] = 1
    _same(lambda: encode_merged(olds, _copies([delta])), lambda: _frozen_route(olds, _copies([delta])))
    with pytest.raises(ValueError):
        labelled_in_conf(["a"] * 6)
    assert labelled_in_conf([1, 2, 3, 4, 5, 6]) == 10 and labelled_in_conf(np.arange(6).reshape(3, 2)) == 6
