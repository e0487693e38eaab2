"""Properties of the engine: merge grouping, arrival order, duplicates and corrections change nothing."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.core.engine import CONFLICTING, EngineSettings
from driftline.analysis.ranking import ranking_hists
from driftline.core.grids import N_SCORE_BINS, RANK_SUB
from driftline.core.rank_hist import rank_rows
from driftline.core.stats import NEG, POS, BucketStats, merge

from helpers import MemoryState, outcome, pred

T0 = 1_700_000_000.0
SLICED = EngineSettings(slice_features=("country", "flag"))


def assert_same(a: BucketStats, b: BucketStats) -> None:
    np.testing.assert_array_equal(a.conf, b.conf)
    np.testing.assert_array_equal(a.hist, b.hist)
    np.testing.assert_array_equal(a.delay, b.delay)
    np.testing.assert_allclose(a.psum, b.psum, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(a.sums, b.sums, rtol=1e-9, atol=1e-7)
    assert {k: (v.num, v.cat, v.missing) for k, v in a.features.items()} == \
        {k: (v.num, v.cat, v.missing) for k, v in b.features.items()}
    assert (a.expired, a.implicit) == (b.expired, b.implicit)
    assert {k: {v: c.tolist() for v, c in vals.items()} for k, vals in a.slices.items()} == \
        {k: {v: c.tolist() for v, c in vals.items()} for k, vals in b.slices.items()}
    assert (a.rank is None) == (b.rank is None)
    if a.rank is not None and b.rank is not None:
        assert (a.rank[0].tolist(), a.rank[1].tolist()) == (b.rank[0].tolist(), b.rank[1].tolist())


def assert_rank_agrees(b: BucketStats) -> None:
    """The ranking histogram is the labelled predictions on the ranking grid: it sums to the score histogram fine
    bin by fine bin, and analysis.ranking takes it (not the coarser fallback)."""
    assert b.rank is not None
    neg, pos = rank_rows(b.rank)
    assert (neg >= 0).all() and (pos >= 0).all()
    np.testing.assert_array_equal(neg.reshape(N_SCORE_BINS, RANK_SUB).sum(axis=1), b.hist[NEG])
    np.testing.assert_array_equal(pos.reshape(N_SCORE_BINS, RANK_SUB).sum(axis=1), b.hist[POS])
    assert ranking_hists(b)[0] is not b.hist[POS] or not b.hist[POS].any()


@st.composite
def event_sets(draw):
    n = draw(st.integers(1, 25))
    raws = []
    for i in range(n):
        ts = T0 + draw(st.integers(0, 20 * 86400))
        score = draw(st.floats(0, 1, allow_nan=False))
        variant = draw(st.sampled_from(["A", "B"]))
        feats = {"amount": draw(st.floats(-1e6, 1e6, allow_nan=False)),
                 "country": draw(st.sampled_from(["FR", "DE", None])), "flag": draw(st.booleans())}
        raws.append(pred(f"id{i}", score, ts, variant=variant, features=feats))
        for _ in range(draw(st.integers(0, 3))):  # zero or more outcomes, later ones are corrections
            raws.append(outcome(f"id{i}", draw(st.integers(0, 1)), ts + draw(st.integers(-3600, 40 * 86400))))
    for j in range(draw(st.integers(0, 3))):  # outcomes whose prediction never comes
        raws.append(outcome(f"orphan{j}", 1, T0))
    return raws


def _batches(raws, cuts):
    edges = sorted(set(c % (len(raws) + 1) for c in cuts))
    out, prev = [], 0
    for e in edges + [len(raws)]:
        out.append(raws[prev:e])
        prev = e
    return [b for b in out if b]


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(event_sets(), st.randoms(use_true_random=False), st.lists(st.integers(0, 200), max_size=4))
def test_any_order_and_batching_gives_same_state(raws, rnd, cuts):
    ref = MemoryState(SLICED)
    ref.apply(raws)
    shuffled = list(raws)
    rnd.shuffle(shuffled)
    other = MemoryState(SLICED)
    for batch in _batches(shuffled, cuts):
        other.apply(batch)
    assert_same(ref.total(), other.total())
    for key in ref.buckets.keys() | other.buckets.keys():
        assert_same(ref.buckets.get(key, BucketStats()), other.buckets.get(key, BucketStats()))
    assert_rank_agrees(ref.total())
    for b in ref.buckets.values():
        assert_rank_agrees(b)


@FAST
@given(event_sets(), st.randoms(use_true_random=False))
def test_duplicates_change_nothing(raws, rnd):
    ref = MemoryState(SLICED)
    ref.apply(raws)
    dup = MemoryState(SLICED)
    doubled = raws + [rnd.choice(raws) for _ in range(len(raws))]
    rnd.shuffle(doubled)
    dup.apply(doubled)
    dup.apply(raws)
    assert_same(ref.total(), dup.total())
    assert dup.counters.get(CONFLICTING, 0) == 0  # exact copies never count as conflicting


@FAST
@given(event_sets(), st.lists(st.integers(0, 10_000), min_size=1, max_size=6))
def test_any_grouping_of_bucket_merges_gives_same_window(raws, cuts):
    s = MemoryState(SLICED)
    s.apply(raws)
    buckets = list(s.buckets.values())
    flat = merge(buckets)
    groups = [merge(g) for g in _batches(buckets, cuts)] if buckets else []
    assert_same(flat, merge(groups))
    assert_same(flat, merge(list(reversed(buckets))))
    restored = BucketStats.from_bytes(flat.to_bytes())
    assert_same(flat, restored)
    packed = merge([BucketStats.from_bytes(b.to_bytes(), features="packed") for b in buckets])
    assert_same(flat, packed)


@FAST
@given(st.floats(0, 1, allow_nan=False), st.integers(0, 1))
def test_correction_then_reversal_restores_state(score, label):
    once = MemoryState(SLICED)
    once.apply([pred("x", score, T0), outcome("x", label, T0 + 100)])
    flipped = MemoryState(SLICED)
    flipped.apply([pred("x", score, T0), outcome("x", label, T0 + 100)])
    flipped.apply([outcome("x", 1 - label, T0 + 200)])
    assert flipped.counters[("corrections", "")] == 1
    assert flipped.total().conf[label].sum() == 0 and flipped.total().conf[1 - label].sum() == 1
    flipped.apply([outcome("x", label, T0 + 100 + 0)])  # stale: older than the correction in force
    flipped.apply([outcome("x", label, T0 + 300)])  # the reversal
    a, b = once.total(), flipped.total()
    np.testing.assert_array_equal(a.conf, b.conf)
    np.testing.assert_array_equal(a.hist, b.hist)
    np.testing.assert_allclose(a.sums, b.sums, atol=1e-9)


def test_outcome_before_prediction_is_held_then_joined():
    s = MemoryState(SLICED)
    s.apply([outcome("late", 1, T0 + 50)])
    assert s.total().predictions == 0 and not s.view.outcomes["late"].matched
    s.apply([pred("late", 0.9, T0)])
    t = s.total()
    assert t.tp == 1 and s.view.outcomes["late"].matched
    assert s.counters[("joined", "outcome_first")] == 1


def test_shadow_mode_same_id_two_variants_both_labelled():
    s = MemoryState(SLICED)
    s.apply([pred("p", 0.9, T0, variant="A"), pred("p", 0.2, T0, variant="B"), outcome("p", 1, T0 + 10)])
    by_variant = {k[2]: v for k, v in s.buckets.items()}
    assert by_variant["A"].tp == 1 and by_variant["B"].fn == 1


def test_duplicate_prediction_first_one_counts():
    s = MemoryState(SLICED)
    s.apply([pred("d", 0.9, T0), pred("d", 0.1, T0 + 5)])
    t = s.total()
    assert t.predictions == 1 and t.unlabelled_flagged == 1
    assert s.counters[("duplicates", "prediction")] == 1


def test_conflicting_duplicates_are_counted_apart_from_exact_copies():
    """New-user tryout: a copy with another score (or ts, or model_version) was counted as a duplicate like an exact
    copy, so results that depend on which copy arrived first went unseen. The first stored still counts."""
    s = MemoryState(SLICED)
    s.apply([pred("d", 0.9, T0), pred("d", 0.9, T0), pred("d", 0.1, T0), pred("d", 0.9, T0 + 5),
             pred("d", 0.9, T0, model_version="v2"), pred("d", 0.1, T0, variant="B")])  # B: another key
    assert s.total().predictions == 2 and s.total().unlabelled_flagged == 1
    assert s.counters[("duplicates", "prediction")] == 4 and s.counters[CONFLICTING] == 3
    later = MemoryState(SLICED)  # against the stored copy, in a later batch, as within one
    later.apply([pred("d", 0.9, T0)])
    later.apply([pred("d", 0.9, T0), pred("d", 0.2, T0)])
    assert later.counters[CONFLICTING] == 1 and later.counters[("duplicates", "prediction")] == 2


def test_implicit_negative_then_late_fraud_report_moves_counts():
    from driftline.core.engine import Engine

    s = MemoryState(SLICED)
    s.apply([pred("m", 0.2, T0)])
    eng = Engine(s.settings, s.view)
    eng.mature([r for recs in s.view.preds.values() for r in recs])
    s._absorb(eng)
    assert s.total().tn == 1 and s.total().implicit == 1
    s.apply([outcome("m", 1, T0 + 40 * 86400)])
    t = s.total()
    assert t.fn == 1 and t.tn == 0 and t.implicit == 0 and t.delay.sum() == 1


def test_expiry_counts_unlabelled_and_drops_join_state():
    from driftline.core.engine import Engine

    s = MemoryState(SLICED)
    s.apply([pred("old", 0.7, T0), pred("done", 0.7, T0), outcome("done", 0, T0 + 5), outcome("orphan", 1, T0)])
    eng = Engine(s.settings, s.view)
    recs = [r for rs in s.view.preds.values() for r in rs]
    eng.expire(recs, [s.view.outcomes["orphan"]])
    res = eng.finish()
    assert res.counters[("expired_predictions", "")] == 1
    assert res.counters[("expired_outcomes", "")] == 1
    assert len(res.deletes) == 2 and "orphan" in res.outcome_deletes
    assert sum(d.expired for d in res.deltas.values()) == 1


def test_slices_follow_late_labels_and_corrections():
    s = MemoryState(SLICED)
    s.apply([pred("s1", 0.9, T0, features={"country": "FR"}), pred("s2", 0.9, T0, features={"country": "DE"}),
             pred("s3", 0.1, T0, features={})])
    s.apply([outcome("s1", 1, T0 + 10), outcome("s2", 0, T0 + 10), outcome("s3", 1, T0 + 10)])
    s.apply([outcome("s2", 1, T0 + 20)])
    sl = s.total().slices["country"]
    assert sl["FR"][1, 1] == 1 and sl["DE"][1, 1] == 1 and sl["DE"][0].sum() == 0
    assert sl["missing"][1, 0] == 1 and sum(c.sum() for c in sl.values()) == 3
