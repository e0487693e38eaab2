"""Coverage of the A/B cost intervals (not a speed benchmark): simulated arms at the fraud example's rates.

`python benchmarks/cost_interval_coverage.py [reps]` prints, per arm size, how often the 95 % interval of
`cost_per_1000` holds the true cost per 1,000 predictions, and how often `cost_difference`'s interval holds the
true treatment − control difference; plus how often the interval leaves the costs a prediction can have.
Arms: prevalence 2 %, recall 0.7 (treatment 0.8), FPR 0.05, the example config's unit costs (400 per missed
positive, 5 per review, model 0.002; complaint cost 0; a variant pricing complaints at 30; and one where reviews
(50) dominate and a miss costs 20), labels on 90 %
of flagged and 30 % of unflagged predictions (partial) or on all of them (full).
"""

from __future__ import annotations

import sys

import numpy as np

from driftline.analysis.abstats import ArmCounts
from driftline.analysis.costs import Costs, cost_difference, cost_per_1000, cost_range

EXAMPLE = Costs(fn_cost=400.0, review_cost=5.0, complaint_rate=0.05, complaint_cost=0.0, model_cost_per_prediction=0.002)
COMPLAINTS = Costs(fn_cost=400.0, review_cost=5.0, complaint_rate=0.05, complaint_cost=30.0,
                   model_cost_per_prediction=0.002)
REVIEWS = Costs(fn_cost=20.0, review_cost=50.0, complaint_rate=0.5, complaint_cost=10.0)
"""A cost mostly of reviews (an expensive manual check, cheap misses)."""


def true_cost(prev: float, rec: float, fpr: float, costs: Costs) -> float:
    """Expected cost per 1,000 predictions at these rates."""
    flag = prev * rec + (1 - prev) * fpr
    return 1000.0 * (costs.model_cost_per_prediction + costs.review_cost * flag
                     + costs.fn_cost * prev * (1 - rec) + costs.fp_cost * (1 - prev) * fpr)


def draw_arm(rng: np.random.Generator, n: int, prev: float, rec: float, fpr: float,
             lab_f: float, lab_u: float) -> ArmCounts:
    """One arm of n predictions; each flagged prediction labelled with probability lab_f, unflagged lab_u."""
    pos = rng.binomial(n, prev)
    tp, fp = rng.binomial(pos, rec), rng.binomial(n - pos, fpr)
    fn, tn = pos - tp, n - pos - fp
    ltp, lfp, lfn, ltn = (int(rng.binomial(x, p)) for x, p in ((tp, lab_f), (fp, lab_f), (fn, lab_u), (tn, lab_u)))
    return ArmCounts(ltp, lfp, lfn, ltn, tp + fp - ltp - lfp, fn + tn - lfn - ltn)


def coverage(n: int, costs: Costs, labels: tuple[float, float], reps: int, seed: int = 0,
             prev: float = 0.02, rec: tuple[float, float] = (0.7, 0.8), fpr: float = 0.05
             ) -> tuple[float, float, float, int]:
    """(arm coverage, difference coverage, share of arm intervals outside the feasible range, valid reps)."""
    rng = np.random.default_rng(seed)
    truth_c, truth_t = true_cost(prev, rec[0], fpr, costs), true_cost(prev, rec[1], fpr, costs)
    least, most = (1000.0 * x for x in cost_range(costs))
    arm_hit = diff_hit = outside = valid = 0
    for _ in range(reps):
        c = draw_arm(rng, n, prev, rec[0], fpr, *labels)
        t = draw_arm(rng, n, prev, rec[1], fpr, *labels)
        ec, d = cost_per_1000(c, costs), cost_difference(t, c, costs)
        if ec.value is None or d.diff is None:
            continue
        valid += 1
        arm_hit += ec.low <= truth_c <= ec.high
        diff_hit += d.low <= truth_t - truth_c <= d.high
        outside += ec.low < least - 1e-9 or ec.high > most + 1e-9
    return arm_hit / valid, diff_hit / valid, outside / valid, valid


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print(f"{'costs':10s} {'labels':7s} {'n':>6s} {'arm cov':>8s} {'diff cov':>9s} {'outside':>8s} {'valid':>6s}")
    for cname, costs in (("example", EXAMPLE), ("complaint", COMPLAINTS), ("reviews", REVIEWS)):
        for lname, labels in (("full", (1.0, 1.0)), ("partial", (0.9, 0.3))):
            for n in (30, 50, 100, 200, 350, 500, 2_000, 20_000):
                arm, diff, out, valid = coverage(n, costs, labels, reps)
                print(f"{cname:10s} {lname:7s} {n:6d} {arm:8.3f} {diff:9.3f} {out:8.3f} {valid:6d}")


if __name__ == "__main__":
    main()
