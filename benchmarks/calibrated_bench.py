"""Accuracy and interval coverage of the calibrated label-free estimate (issue 15.5) against the raw-score
estimate measured in the same run: the demo's stream (variant A, daily, weeks 1–3 and the concept-drift week 4)
and an over-confident model under covariate shift only (20 seeds). Prints MAE, coverage and the mean interval
width per metric, next to the width the same spreads give summed in quadrature (the interval before the map's
error was bounded separately); CBPE's week-3 figures (recall MAE 0.055, precision 0.024) are the reference.
Usage: .venv/bin/python benchmarks/calibrated_bench.py
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from calibrated_sim import day_histograms  # noqa: E402
from test_calibrated import _mids, _realised, covariate_shift_days  # noqa: E402

from driftline.analysis.calibrated import METRICS, CalibratedEstimate, estimate, fit_map  # noqa: E402
from driftline.analysis.estimates import early_warning  # noqa: E402
from driftline.analysis.rates import Z95  # noqa: E402
from driftline.core.stats import BucketStats  # noqa: E402

SEEDS = range(11, 31)


def _widths(e: CalibratedEstimate, k: str) -> tuple[float, float]:
    """(interval width, width of the same spreads summed in quadrature), both clipped to [0, 1]."""
    m, (sl, sm) = e.metric(k), e.spread[k]
    half = Z95 * math.hypot(sl, sm)
    return m.high - m.low, min(1.0, m.value + half) - max(0.0, m.value - half)  # type: ignore[operator]


def _summary(pairs: list[tuple[CalibratedEstimate, dict[str, float]]]) -> dict[str, tuple[float, ...]]:
    """Per metric: (MAE, coverage, coverage in quadrature, mean width, mean width in quadrature)."""
    out = {}
    for k in METRICS:
        rows = []
        for e, real in pairs:
            m, w = e.metric(k), _widths(e, k)
            err = abs(m.value - real[k])  # type: ignore[operator]
            rows.append((err, m.low <= real[k] <= m.high, err <= w[1] / 2 + 1e-15, *w))  # type: ignore[operator]
        out[k] = tuple(float(np.mean([r[i] for r in rows])) for i in range(5))
    return out


def _line(s: dict[str, tuple[float, ...]], n: int) -> str:
    return "  ".join(f"{k} MAE {v[0]:.3f} cover {round(v[1] * n)}/{n} (quadrature {round(v[2] * n)}/{n}) "
                     f"width {v[3]:.4f} (quadrature {v[4]:.4f})" for k, v in s.items())


def main() -> None:
    days = day_histograms()
    ref = sum(days[(v, d)] for v in "AB" for d in range(14))
    t0 = time.perf_counter()
    cmap = fit_map(ref[1], ref[0])
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for d in range(28):
        estimate(days[("A", d)].sum(0), cmap, 0.5)
    est_s = (time.perf_counter() - t0) / 28
    print(f"map fitted on weeks 1-2 ({cmap.positives + cmap.negatives:,} labels, {len(cmap.p)} blocks) in "
          f"{fit_s * 1000:.1f} ms; one window's estimate {est_s * 1000:.2f} ms ({est_s / fit_s:.2f} × the fit)")
    for label, rng in (("weeks 1-3", range(21)), ("week 3", range(14, 21)), ("week 4 (concept drift)", range(21, 28))):
        pairs = [(estimate(days[("A", d)].sum(0), cmap, 0.5), _realised(days[("A", d)])) for d in rng]
        raw = [abs(early_warning(BucketStats(hist=days[("A", d)].copy(), psum=_mids() * days[("A", d)]), 0.5,
                                 "all").recall.value - r["recall"]) for d, (_, r) in zip(rng, pairs)]
        s = _summary(pairs)
        print(f"demo A daily, {label}: {_line(s, len(rng))}  | raw-score recall MAE {np.mean(raw):.3f} "
              f"(ratio raw/calibrated {np.mean(raw) / s['recall'][0]:.1f})")
    ok = ok_quad = 0
    widths: dict[str, list[float]] = {k: [] for k in METRICS}
    for seed in SEEDS:
        s = _summary(covariate_shift_days(seed))
        ok += all(v[1] >= 0.9 for v in s.values())
        ok_quad += all(v[2] >= 0.9 for v in s.values())
        for k in METRICS:
            widths[k].append(s[k][3] / s[k][4])
        print(f"covariate shift seed {seed}: {_line(s, 20)}")
    print(f"covariate shift, {len(SEEDS)} seeds: all four metrics covered on >= 90 % of days for {ok}/{len(SEEDS)} "
          f"seeds (quadrature {ok_quad}/{len(SEEDS)}); mean width ratio to quadrature "
          + "  ".join(f"{k} {np.mean(v):.2f}" for k, v in widths.items()))


if __name__ == "__main__":
    main()
