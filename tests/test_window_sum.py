"""core/window_sum.sum_encoded (a window's sum straight from encoded buckets) equals merge of the decoded buckets
to the last bit: on engine-made buckets and on arbitrary clean ones (negative counts, ±0.0 sums, slices, ranking
histograms known, empty or unknown), on older encodings (no slices, no ranking arrays) and on damaged ones (which
take merge's own route), and the readouts' `merged` takes it only when nothing asked for features."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.core.stats import BucketStats, merge
from driftline.core.window_sum import sum_encoded
from driftline.readouts.windows import merged
from driftline.storage.store import BucketRow

from test_encoded_many import _engine_batch
from test_store_fastpaths import buckets

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _reference(datas: list[bytes]) -> bytes:
    return merge(BucketStats.from_bytes(d, features=False) for d in datas).to_bytes()


@st.composite
def encoded(draw: Any) -> list[bytes]:
    """Encoded buckets as the store holds them, some in an older form (no "s", no "ri"/"rc")."""
    stats = draw(st.lists(buckets(dirty=False), max_size=6)) + (_engine_batch(draw, 12) if draw(st.booleans())
                                                                else [])
    out = []
    for b in stats:
        b.bins = None
        data = b.to_bytes()
        if draw(st.integers(0, 4)) == 0:
            doc = msgspec.msgpack.decode(data)
            for key in draw(st.lists(st.sampled_from(["s", "ri"]), unique=True)):
                doc.pop(key, None)
                if key == "ri":
                    doc.pop("rc", None)
            data = msgspec.msgpack.encode(doc)
        out.append(data)
    return out


@SETTINGS
@given(encoded())
def test_the_encoded_sum_equals_merge_of_the_decoded_buckets(datas) -> None:
    assert sum_encoded(datas).to_bytes() == _reference(datas)


def test_damaged_buckets_take_merges_route() -> None:
    b = BucketStats()
    b.hist[1, 5], b.psum[1, 5], b.conf[1, 1] = 2, 1.5, 2
    doc = msgspec.msgpack.decode(b.to_bytes())
    twice = dict(doc, hi=doc["hi"] * 2, hc=doc["hc"] * 2, hp=doc["hp"] * 2)  # a bin listed twice: assigned, not added
    later = dict(doc, ri=np.array([9, 3], np.int32).tobytes(), rc=np.array([1, 1], np.int64).tobytes())
    for bad in (twice, dict(doc, conf=[1, 2]), dict(doc, hc=b"\0"), dict(doc, sums="x"), later):
        datas = [b.to_bytes(), msgspec.msgpack.encode(bad)]
        try:
            want = _reference(datas)
        except Exception as err:  # noqa: BLE001 - the fast route must fail alike
            try:
                sum_encoded(datas)
            except Exception as mine:  # noqa: BLE001
                assert type(mine) is type(err)
                continue
            raise AssertionError(f"merge raised {err!r}, sum_encoded did not")
        assert sum_encoded(datas).to_bytes() == want


def test_merged_sums_encoded_rows_only_without_features() -> None:
    b = BucketStats()
    b.hist[0, 3], b.conf[0, 0] = 1, 1
    rows = [BucketRow.encoded("m", "v", "A", 0, s, b.to_bytes(), False) for s in range(3)]
    assert merged(rows).to_bytes() == _reference([b.to_bytes()] * 3)
    assert all(r.data is not None for r in rows)  # the fast route: nothing decoded
    rows[0].stats.conf[0, 0] = 5  # a caller changed a decoded row: merge sees the change
    assert rows[0].data is None  # its bytes are dropped once decoded
    assert int(merged(rows).conf[0, 0]) == 7
    feats = [BucketRow.encoded("m", "v", "A", 0, s, b.to_bytes(), True) for s in range(2)]
    assert int(merged(feats).conf[0, 0]) == 2 and all(r.data is None for r in feats)


def test_a_week_of_buckets_adds_its_float_sums_in_merges_order() -> None:
    """336 buckets with sums of mixed magnitudes: a pairwise (numpy sum) or reordered addition differs from merge's
    bucket-after-bucket one in the last digits, which the exporter and `metrics` would then disagree on."""
    rng = np.random.default_rng(11)
    datas = []
    for k in range(336):
        b = BucketStats()
        b.sums[:] = rng.normal(0, 10.0 ** rng.integers(-3, 6, (3, 3)))
        b.sums[0, 0] = -0.0 if k == 0 else b.sums[0, 0]
        cells = rng.choice(b.hist.size, 40, replace=False)
        b.hist.ravel()[cells] = rng.integers(1, 9, 40)
        b.psum.ravel()[cells] = rng.normal(0, 10.0 ** rng.integers(-3, 6, 40))
        datas.append(b.to_bytes())
    assert sum_encoded(datas).to_bytes() == _reference(datas)


@SETTINGS
@given(encoded())
def test_the_flag_records_kept_by_a_window_sum_are_flag_records_own(datas) -> None:
    """merged() keeps each row's flag record from its one decode; flags_in_force then reads those instead of
    decoding again: the same records and thresholds as rows never summed (and a decoded row's own stats win)."""
    from driftline.core.window_sum import flag_record
    from driftline.readouts.windows import flags_in_force

    records: list = []
    sum_encoded(datas, records)
    assert records in ([], [flag_record(d) for d in datas])  # [] where merge's own route summed them
    summed = [BucketRow.encoded("m", "v", "A", 0, s, d, False) for s, d in enumerate(datas)]
    merged(summed)
    fresh = [BucketRow.encoded("m", "v", "A", 0, s, d, False) for s, d in enumerate(datas)]
    assert [r.flag_record() for r in summed] == [flag_record(d) for d in datas]
    assert flags_in_force(summed, 0.5) == flags_in_force(fresh, 0.5)
    if summed:
        summed[0].stats.conf[0, 0] += 1  # a caller changed the decoded bucket: its own count, not the kept one
        assert summed[0].flag_record()[1] == summed[0].stats.predictions
