"""Wilson intervals against scipy and the seeds' worked examples."""

import numpy as np
import pytest
from scipy.stats import binomtest

from driftline.analysis.rates import rate, wilson_interval


def test_wilson_matches_scipy_on_random_counts():
    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(1, 5000))
        k = int(rng.integers(0, n + 1))
        ci = binomtest(k, n).proportion_ci(method="wilson")
        low, high = wilson_interval(k, n)
        assert low == pytest.approx(ci.low, abs=1e-9)
        assert high == pytest.approx(ci.high, abs=1e-9)


@pytest.mark.parametrize("k,n,low,high", [(93, 97, 0.899, 0.984), (73, 89, 0.728, 0.886)])
def test_seed_wilson_examples(k, n, low, high):
    r = rate(k, n)
    assert round(r.low, 3) == low and round(r.high, 3) == high


def test_zero_n_is_null_not_zero():
    r = rate(0, 0)
    assert r.value is None and r.low is None and r.high is None and r.n == 0
    assert r.to_json()["value"] is None


def test_indicative_below_30():
    assert rate(5, 29).indicative and not rate(5, 30).indicative


def test_bounds_at_zero_and_all_successes_are_exact():
    """0/14 gave a lower bound of 1.4e-17 (rounding of centre − half); scipy's Wilson interval as reference."""
    for n in range(1, 3001):
        low0, high0 = wilson_interval(0, n)
        lown, highn = wilson_interval(n, n)
        assert low0 == 0.0 and highn == 1.0, n
        ref0 = binomtest(0, n).proportion_ci(0.95, method="wilson")
        refn = binomtest(n, n).proportion_ci(0.95, method="wilson")
        assert high0 == pytest.approx(ref0.high, rel=1e-12) and lown == pytest.approx(refn.low, rel=1e-12)
