"""Accuracy of the calibrated label-free estimate (issue 15.5) against the raw-score estimate measured in the
same run: the demo's stream (variant A, daily, weeks 1–3 and the concept-drift week 4) and an over-confident
model under covariate shift only. Prints MAE and interval coverage per metric; CBPE's week-3 figures
(recall MAE 0.055, precision 0.024) are the reference. Usage: .venv/bin/python benchmarks/calibrated_bench.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from calibrated_sim import day_histograms  # noqa: E402
from test_calibrated import _mids, _realised, covariate_shift_run  # noqa: E402

from driftline.analysis.calibrated import estimate, fit_map  # noqa: E402
from driftline.analysis.estimates import early_warning  # noqa: E402
from driftline.core.stats import BucketStats  # noqa: E402

NAMES = ("recall", "precision", "fpr", "prevalence")


def main() -> None:
    days = day_histograms()
    ref = sum(days[(v, d)] for v in "AB" for d in range(14))
    t0 = time.perf_counter()
    cmap = fit_map(ref[1], ref[0])
    fit_s = time.perf_counter() - t0
    print(f"map fitted on weeks 1-2 ({cmap.positives + cmap.negatives:,} labels, {len(cmap.p)} blocks) "
          f"in {fit_s * 1000:.1f} ms")
    for label, rng in (("weeks 1-3", range(21)), ("week 3", range(14, 21)), ("week 4 (concept drift)", range(21, 28))):
        err = {k: [] for k in NAMES}
        inside = {k: 0 for k in NAMES}
        raw = []
        for d in rng:
            h = days[("A", d)]
            e, real = estimate(h.sum(0), cmap, 0.5), _realised(h)
            for k in NAMES:
                m = e.metric(k)
                err[k].append(abs(m.value - real[k]))
                inside[k] += m.low <= real[k] <= m.high
            r = early_warning(BucketStats(hist=h.copy(), psum=_mids() * h), 0.5, "all")
            raw.append(abs(r.recall.value - real["recall"]))
        n = len(rng)
        cells = "  ".join(f"{k} MAE {np.mean(err[k]):.3f} cover {inside[k]}/{n}" for k in NAMES)
        print(f"demo A daily, {label}: {cells}  | raw-score recall MAE {np.mean(raw):.3f} "
              f"(ratio raw/calibrated {np.mean(raw) / np.mean(err['recall']):.1f})")
    for seed in (11, 12, 13):
        err, inside = covariate_shift_run(seed)
        print(f"covariate shift seed {seed}: " + "  ".join(f"{k} MAE {err[k]:.3f} cover {inside[k]:.0%}"
                                                          for k in NAMES))


if __name__ == "__main__":
    main()
