"""Shadow-mode paired comparisons: sign test / McNemar and the paired bootstrap."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar

from driftline.analysis.costs import Costs, cost_per_1000
from driftline.analysis.paired import PairedTable, paired_bootstrap, paired_tests, sign_test
from driftline.core.stats import NEG, POS

COSTS = Costs(400.0, 5.0, 0.05, 20.0, 0.002)


@pytest.mark.parametrize(("a_only", "b_only", "p"), [(9, 6, 0.607), (8, 2, 0.109), (15, 3, 0.0075)])
def test_seed004_sign_test(a_only: int, b_only: int, p: float) -> None:
    """Seed 004: discordant 9 vs 6 -> p = 0.607, 8 vs 2 -> 0.109, 15 vs 3 -> 0.0075."""
    st = sign_test(a_only, b_only)
    assert st.p_value == pytest.approx(binomtest(b_only, a_only + b_only, 0.5).pvalue, rel=1e-12)
    assert round(st.p_value, 4 if p < 0.01 else 3) == p
    assert st.discordant == a_only + b_only


def test_sign_test_matches_exact_mcnemar() -> None:
    rng = np.random.default_rng(21)
    for _ in range(200):
        a, b, c, d = (int(x) for x in rng.integers(0, 60, 4))
        if b + c == 0:
            continue
        assert sign_test(b, c).p_value == pytest.approx(mcnemar([[a, b], [c, d]], exact=True).pvalue, rel=1e-9)
    assert sign_test(0, 0).p_value is None


def _shadow(seed: int, n: int = 50_000, prev: float = 0.02, corr: float = 0.9):
    """Two correlated scores per prediction; labels with ~60 % coverage; threshold 0.5."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < prev
    base = rng.normal(0, 1, n) + 2.6 * y
    s_c = base + rng.normal(0, np.sqrt(1 - corr), n)
    s_t = base + 0.15 * y + rng.normal(0, np.sqrt(1 - corr), n)
    labels = np.where(rng.random(n) < 0.6, y.astype(int), -1)
    return labels, s_c > 2.0, s_t > 2.0


def test_paired_table_and_tests_count_discordant_pairs() -> None:
    labels, fc, ft = _shadow(22)
    tab = PairedTable.from_arrays(labels, fc, ft)
    pt = paired_tests(tab)
    pos, neg = labels == 1, labels == 0
    assert (pt.recall.control_only, pt.recall.treatment_only) == (int((pos & fc & ~ft).sum()),
                                                                  int((pos & ~fc & ft).sum()))
    assert (pt.fpr.control_only, pt.fpr.treatment_only) == (int((neg & fc & ~ft).sum()), int((neg & ~fc & ft).sum()))
    ref = mcnemar([[0, pt.recall.control_only], [pt.recall.treatment_only, 0]], exact=True).pvalue
    assert pt.recall.p_value == pytest.approx(ref, rel=1e-9)
    ctl = tab.arm("control")
    assert (ctl.tp, ctl.fp, ctl.fn, ctl.tn) == (int((pos & fc).sum()), int((neg & fc).sum()),
                                                int((pos & ~fc).sum()), int((neg & ~fc).sum()))
    assert ctl.predictions == tab.n == len(labels)
    json.dumps(pt.to_json(), allow_nan=False)


def test_seed001_paired_interval_narrower_than_unpaired() -> None:
    """Seed 001 step 6: 40 cases, v2 fixes 6 and breaks 2 (0.75 -> 0.85); paired 95 % bootstrap
    [−0.025, +0.225], unpaired [−0.075, +0.275]. Here: 40 positives, recall = share correct."""
    c = np.zeros((3, 2, 2), dtype=np.int64)
    c[POS, 1, 1], c[POS, 1, 0], c[POS, 0, 1], c[POS, 0, 0] = 28, 2, 6, 4
    tab = PairedTable(c)
    p = paired_bootstrap(tab, n_boot=10_000, seed=0).recall
    u = paired_bootstrap(tab, n_boot=10_000, seed=0, paired=False).recall
    assert p.diff == pytest.approx(0.10)
    assert p.low == pytest.approx(-0.025, abs=0.026) and p.high == pytest.approx(0.225, abs=0.026)
    assert u.low == pytest.approx(-0.075, abs=0.026) and u.high == pytest.approx(0.275, abs=0.026)
    assert p.high - p.low < u.high - u.low
    assert p.low < 0 < p.high and u.low < 0 < u.high  # both include 0, as in the seed


def test_multinomial_cells_equal_resampling_prediction_ids() -> None:
    """Drawing cell counts ~ Multinomial equals resampling ids: compare with explicit id resampling."""
    labels, fc, ft = _shadow(23, n=4_000, prev=0.05)
    tab = PairedTable.from_arrays(labels, fc, ft)
    ours = paired_bootstrap(tab, n_boot=4_000, seed=1)
    rng = np.random.default_rng(2)
    pos, neg = labels == 1, labels == 0
    diffs = []
    for _ in range(4_000):
        i = rng.integers(0, len(labels), len(labels))
        p, fci, fti = pos[i], fc[i], ft[i]
        diffs.append((p & fti).sum() / p.sum() - (p & fci).sum() / p.sum())
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    assert ours.recall.low == pytest.approx(lo, abs=0.01) and ours.recall.high == pytest.approx(hi, abs=0.01)
    assert neg.sum() > 0


def test_paired_bootstrap_on_shadow_traffic() -> None:
    labels, fc, ft = _shadow(24)
    tab = PairedTable.from_arrays(labels, fc, ft)
    p = paired_bootstrap(tab, COSTS, n_boot=2_000, seed=3)
    u = paired_bootstrap(tab, COSTS, n_boot=2_000, seed=3, paired=False)
    for name in ("recall", "precision", "cost_per_1000"):
        bp, bu = getattr(p, name), getattr(u, name)
        assert bp.diff == pytest.approx(bu.diff)
        assert bp.high - bp.low < 0.8 * (bu.high - bu.low), name  # pairing removes shared noise
        assert bp.low <= bp.diff <= bp.high
    want = cost_per_1000(tab.arm("treatment"), COSTS).value - cost_per_1000(tab.arm("control"), COSTS).value
    assert p.cost_per_1000.diff == pytest.approx(want)
    assert paired_bootstrap(tab, COSTS, n_boot=500, seed=3) == paired_bootstrap(tab, COSTS, n_boot=500, seed=3)
    json.dumps(p.to_json(), allow_nan=False)


def test_paired_bootstrap_empty_and_no_costs() -> None:
    empty = paired_bootstrap(PairedTable(np.zeros((3, 2, 2), dtype=np.int64)))
    assert empty.recall.diff is None and empty.cost_per_1000 is None
    c = np.zeros((3, 2, 2), dtype=np.int64)
    c[NEG, 0, 0] = 100  # no positives: recall undefined, never 0
    assert paired_bootstrap(PairedTable(c), n_boot=50).recall.diff is None
