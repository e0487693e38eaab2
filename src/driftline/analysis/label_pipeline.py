"""How an arm's labelled positives grow from now on when labels come weeks after the prediction: the predictions
already stored keep gaining labels without more traffic, and new traffic gains them only after the label delay.

Model (stated in the readout): traffic continues at the window's rate; a prediction's label arrives after a delay
drawn from the arm's stored label-delay histogram (uniform within each bin; the open last bin at its lower edge),
each bin weighted by the inverse share of the predictions old enough to show it (observable_weighted), so a delay
bin is estimated from the predictions that could have shown it. The histogram and those predictions are a delay
sample that may reach past the window (the readout's: the arm's predictions over the label horizon ending at the
newest stored event): a 14-day window holds no prediction old enough to show a 20-day delay, and its own sample
made F reach 1 by ~15 days where labels came 2–21 days after the prediction (churn tryout: 690 positives still to
come where ~1,607 were). No sample shows delays longer than its oldest prediction's age: `cut_s` flags it;
each prediction whose label has arrived is a positive with the arm's yield ρ, estimated as labelled positives now ÷
the expected number of predictions labelled by now, Σ_b P_b·F(age_b). Then the labelled positives `days` from now are

    E(d) = n_now + ρ·Σ_b P_b·(F(age_b + d) − F(age_b)) + ρ·λ·∫_0^d F(s) ds,

so a stream in steady state gains ρ·λ a day from the start (the stored predictions ripen as fast as new ones
would), where the labelled-positives-so-far ÷ days rate reads low by the share of the window still unlabelled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DAY_S = 86400.0


@dataclass(frozen=True, slots=True)
class LabelPipeline:
    """One arm's labelled positives now and the model above; `expected(days)` is E(d)."""

    labelled: int
    yield_: float
    per_day: float
    ages_s: np.ndarray
    counts: np.ndarray
    cdf_x: np.ndarray
    cdf_y: np.ndarray
    cdf_int: np.ndarray
    delay_source: str = "all_labels"
    """Whose label delays F is made of: "positives" (the positives' own) or "all_labels" (every class's, when the
    positives' own are not known: a class labelled sooner then makes the positives look sooner)."""
    longest_s: float = 0.0
    """The longest label delay stored (the upper edge of the histogram's last non-empty bin; the open bin's lower)."""
    cut_s: float | None = None
    """The delay sample's oldest prediction's age when F may be cut there: the sample is younger than the label
    horizon and labels still came after more than CUT_SHARE of that age; longer delays are then counted as none,
    so the positives still to come may read low. None when the data can show the delays."""

    def cdf(self, x: np.ndarray | float) -> np.ndarray:
        """F: the share of labels arrived `x` seconds after the prediction."""
        return np.interp(x, self.cdf_x, self.cdf_y, left=0.0, right=1.0)

    def cdf_integral(self, x: float) -> float:
        """∫_0^x F(s) ds in seconds (exact for the piecewise-linear F)."""
        if x <= 0:
            return 0.0
        k = int(np.searchsorted(self.cdf_x, x, side="right")) - 1
        if k >= len(self.cdf_x) - 1:
            return float(self.cdf_int[-1] + (x - self.cdf_x[-1]))
        return float(self.cdf_int[k] + (x - self.cdf_x[k]) * (self.cdf_y[k] + float(self.cdf(x))) / 2.0)

    def from_stored(self, days: float) -> float:
        """Labelled positives the stored predictions add within `days` (no new traffic needed)."""
        ds = days * DAY_S
        return float(self.yield_ * np.sum(self.counts * (self.cdf(self.ages_s + ds) - self.cdf(self.ages_s))))

    def pending(self) -> float:
        """Labelled positives the stored predictions will still add, however long one waits."""
        return float(self.yield_ * np.sum(self.counts * (1.0 - self.cdf(self.ages_s))))

    def expected(self, days: float) -> float:
        """E(days): labelled positives `days` from now (the module formula)."""
        if days <= 0:
            return float(self.labelled)
        new = self.yield_ * self.per_day * self.cdf_integral(days * DAY_S) / DAY_S
        return self.labelled + self.from_stored(days) + new

    @property
    def positives_per_day(self) -> float:
        """ρ·λ: labelled positives a day of traffic brings once its labels have arrived."""
        return self.yield_ * self.per_day


CUT_SHARE = 0.75
"""Labels still coming after more than this share of the oldest sampled prediction's age flag F as cut (`cut_s`):
the last quarter of the ages is seen by few predictions, and the delays past it by none."""


def label_pipeline(labelled: int, delay_hist: np.ndarray, delay_edges: np.ndarray, ages_s: np.ndarray,
                   counts: np.ndarray, per_day: float, delay_source: str = "all_labels",
                   sample_ages_s: np.ndarray | None = None, sample_counts: np.ndarray | None = None,
                   seen_s: float | None = None) -> LabelPipeline | None:
    """The arm's pipeline from its labelled positives now, a label-delay histogram (bins on `delay_edges`, the
    last one open: the positives' own delays where known, `delay_source`), the age (when its labels are known) and
    size of each stored bucket of the window and its predictions a day; None when no label delay is stored or no
    stored prediction can have been labelled by now (ρ cannot be told). The histogram was counted over the buckets
    of ages `sample_ages_s` and sizes `sample_counts` (by default the window's own), whose oldest prediction is
    `seen_s` old when that is younger than the label horizon (None: the sample is as old as the horizon, and a
    delay past it is never counted). F is the delay of a positive's label: mixed with the negatives' (churn:
    positives 30–60 d, negatives confirmed at 30 d) it counted positives as arriving with the negatives and read
    40 days to power where 19 suffice (tests/test_ab_power_label_delay.py)."""
    edges = np.asarray(delay_edges, dtype=np.float64)
    ages, n = np.asarray(ages_s, dtype=np.float64), np.asarray(counts, dtype=np.float64)
    s_ages = ages if sample_ages_s is None else np.asarray(sample_ages_s, dtype=np.float64)
    s_n = n if sample_counts is None else np.asarray(sample_counts, dtype=np.float64)
    raw = np.asarray(delay_hist, dtype=np.float64)
    hist = observable_weighted(raw, edges, s_ages, s_n)
    total = hist.sum()
    if total <= 0 or per_day <= 0:
        return None
    x = np.concatenate((edges, [edges[-1] + 1.0]))  # the open last bin's mass at its lower edge (1 s wide)
    y = np.concatenate(([0.0], np.minimum(np.cumsum(hist) / total, 1.0)))  # a cumulative sum ÷ its total can
    y[-1] = 1.0  # end an ulp above or below 1: pending() read -6.7e-14 positives once F passed 1 (verify tryout)
    cum = np.concatenate(([0.0], np.cumsum(np.diff(x) * (y[:-1] + y[1:]) / 2.0)))
    arrived = float(np.sum(n * np.interp(ages, x, y, left=0.0, right=1.0)))
    if arrived <= 0:
        return None
    last = int(np.flatnonzero(raw > 0)[-1])
    longest = float(edges[last + 1] if last + 1 < len(edges) else edges[last])
    cut = seen_s if seen_s is not None and longest > CUT_SHARE * seen_s else None
    return LabelPipeline(int(labelled), labelled / arrived, float(per_day), ages, n, x, y, cum, delay_source,
                         longest, cut)


def observable_weighted(hist: np.ndarray, edges: np.ndarray, ages: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The delay histogram of the labels received so far, each bin divided by the share of predictions old enough
    to show a delay that long (its middle; the open last bin its lower edge): young predictions' long delays are
    not seen yet, so the raw histogram reads delays short (churn, delays 30–60 d over a 70-day window: 21.7
    labelled positives a day where 25 arrive). Bins no prediction is old enough for stay as they are (empty)."""
    mids = np.concatenate(((edges[:-1] + edges[1:]) / 2.0, edges[-1:]))
    old = np.array([counts[ages > m].sum() for m in mids]) / max(float(counts.sum()), 1e-300)
    return np.where(old > 0, hist / np.where(old > 0, old, 1.0), hist)


def days_until(target: float, curves: tuple[LabelPipeline, ...], limit: float = 36525.0) -> float | None:
    """Days until the curves' expected labelled positives together reach `target` (0 when they already do;
    None when not within `limit` days)."""
    def total(d: float) -> float:
        return sum(c.expected(d) for c in curves)
    if total(0.0) >= target:
        return 0.0
    if total(limit) < target:
        return None
    lo, hi = 0.0, limit
    for _ in range(80):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if total(mid) < target else (lo, mid)
    return hi
