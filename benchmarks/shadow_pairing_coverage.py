"""Shadow mode: how the independent-arms intervals behave when both arms score the same ids (not a speed benchmark).

`python benchmarks/shadow_pairing_coverage.py [reps]` simulates shadow windows (every id scored by control and
treatment, decisions agreeing on most ids) and prints the coverage and mean width of the treatment − control
precision, alert-rate and cost-per-1,000 intervals that treat the arms as independent (Newcombe; MOVER on the
arms' cost intervals), next to the paired bootstrap over the same ids (analysis/paired.py).
"""

from __future__ import annotations

import sys

import numpy as np
from statsmodels.stats.proportion import confint_proportions_2indep

from driftline.analysis.costs import Costs, cost_difference
from driftline.analysis.paired import PairedTable, paired_bootstrap

COSTS = Costs(fn_cost=400.0, review_cost=5.0, complaint_rate=0.05, complaint_cost=0.0, model_cost_per_prediction=0.002)


def cell_probs(prev: float, agree: float) -> np.ndarray:
    """P[label, control flags, treatment flags]: control recall 0.70 / FPR 0.05, treatment 0.75 / 0.04; `agree`
    is the share of the rarer decision the other arm repeats (1 = nested decisions, the correlation shadow
    models of one feature set have)."""
    p = np.zeros((3, 2, 2))
    for state, base, rate_c, rate_t in ((1, prev, 0.70, 0.75), (0, 1 - prev, 0.05, 0.04)):
        both = agree * min(rate_c, rate_t) + (1 - agree) * rate_c * rate_t
        p[state, 1, 1] = base * both
        p[state, 1, 0] = base * (rate_c - both)
        p[state, 0, 1] = base * (rate_t - both)
        p[state, 0, 0] = base * (1 - rate_c - rate_t + both)
    return p


def truths(p: np.ndarray) -> dict[str, float]:
    conf_c, conf_t = p.sum(axis=2), p.sum(axis=1)
    def prec(c: np.ndarray) -> float:
        return c[1, 1] / (c[1, 1] + c[0, 1])
    def cost(c: np.ndarray) -> float:
        return 1000 * (COSTS.model_cost_per_prediction + COSTS.review_cost * c[:, 1].sum() + COSTS.fn_cost * c[1, 0])
    return {"precision": prec(conf_t) - prec(conf_c), "alert_rate": conf_t[:, 1].sum() - conf_c[:, 1].sum(),
            "cost_per_1000": cost(conf_t) - cost(conf_c)}


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    print(f"{'n':>6s} {'agree':>5s} {'metric':13s} {'indep cov':>9s} {'paired cov':>10s} {'indep/paired width':>18s}")
    for n, agree in ((2_000, 0.9), (10_000, 0.9), (10_000, 0.5)):
        p = cell_probs(0.05, agree)
        truth = truths(p)
        rng = np.random.default_rng(3)
        hits = {k: [0, 0] for k in truth}
        widths = {k: [0.0, 0.0] for k in truth}
        for _ in range(reps):
            counts = rng.multinomial(n, p.ravel()).reshape(3, 2, 2)
            tab = PairedTable(counts)
            c, t = tab.arm("control"), tab.arm("treatment")
            indep = {"precision": confint_proportions_2indep(t.tp, t.tp + t.fp, c.tp, c.tp + c.fp, method="newcomb"),
                     "alert_rate": confint_proportions_2indep(t.flagged, n, c.flagged, n, method="newcomb")}
            d = cost_difference(t, c, COSTS)
            indep["cost_per_1000"] = (d.low, d.high)
            boot = paired_bootstrap(tab, COSTS, n_boot=1000, seed=0)
            paired = {"precision": (boot.precision.low, boot.precision.high),
                      "cost_per_1000": (boot.cost_per_1000.low, boot.cost_per_1000.high)}
            # alert rate: the paired (Wald) interval for a difference of two proportions on the same ids
            b, cc = counts[:, 0, 1].sum(), counts[:, 1, 0].sum()
            dd = (b - cc) / n
            se = np.sqrt((b + cc) / n - dd ** 2) / np.sqrt(n)
            paired["alert_rate"] = (dd - 1.96 * se, dd + 1.96 * se)
            for k in truth:
                for j, (lo, hi) in enumerate((indep[k], paired[k])):
                    hits[k][j] += lo <= truth[k] <= hi
                    widths[k][j] += hi - lo
        for k in truth:
            print(f"{n:6d} {agree:5.1f} {k:13s} {hits[k][0] / reps:9.3f} {hits[k][1] / reps:10.3f} "
                  f"{widths[k][0] / widths[k][1]:18.2f}", flush=True)


if __name__ == "__main__":
    main()
