"""Multivariate drift: PCA reconstruction error of a window's feature sample against the reference's (NannyML's
data reconstruction drift), with a permutation test so that the call has a known false-alarm rate.

The reference sample (hash order) is split in two: the *fit* half (even ranks) fixes the encoding (numeric:
mean imputation of missing values; categorical: one-hot of its `TOP_CATEGORIES` most frequent values, others and
missing all-zero), the standardisation and the principal components (the fewest explaining `variance` of the
variance); the *calibration* half (odd ranks) gives the reconstruction errors expected without drift. The
statistic is the window's mean reconstruction error (Euclidean, in standardised units). A change in how features
relate (a correlation that flips) moves rows off the reference's principal subspace and raises it even when every
marginal is unchanged. Under no drift the calibration rows and the window rows are exchangeable given the fit
half, so the two-sided permutation test of their mean errors has false-alarm rate ≤ alpha exactly (p-value
(1 + #{|permuted difference| ≥ observed}) / (1 + B), seeded: the same data give the same p). Pure: no IO.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.sample import Row

TOP_CATEGORIES = 5
"""One-hot columns per categorical feature (its most frequent values in the reference's fit half)."""
MIN_ROWS = 50
"""Fewest rows of the window sample and of each reference half for a verdict (else `drifted` is null)."""
PERMUTATIONS = 999
CHUNK = 50
Z_MAX = 1e100
"""Standardised values are clipped to ±Z_MAX: a window value 1e300 standard deviations out is as drifted as one
1e100 out, and bounded vectors keep every sum of squares finite (no inf or NaN reaches the test or the JSON)."""
_BIG = 2.0 ** 500
"""Columns reaching this magnitude are scaled by a power of two before their mean and spread are taken (squares
of their deviations would overflow); below it nothing is scaled, so ordinary data give the same bits as before."""


@dataclass(frozen=True, slots=True)
class Encoding:
    """How rows become standardised vectors: column names, per-column kind/source, centre and scale."""

    columns: tuple[str, ...]
    sources: tuple[tuple[str, str | None], ...]
    """Per column (feature, category): category None for a numeric feature."""
    fill: np.ndarray
    centre: np.ndarray
    scale: np.ndarray
    unit: np.ndarray
    """Per column, the power of two raw values are multiplied by before centring (1 unless a value ≥ 2**500):
    exact, so it changes no bits, it only keeps huge columns from overflowing."""


def _raw_matrix(rows: Sequence[Row], sources: Sequence[tuple[str, str | None]], fill: np.ndarray) -> np.ndarray:
    out = np.empty((len(rows), len(sources)), dtype=np.float64)
    for j, (name, cat) in enumerate(sources):
        if cat is None:
            col = [v if isinstance(v := r.get(name), float) else math.nan for r in rows]
            x = np.asarray(col, dtype=np.float64)
            out[:, j] = np.where(np.isnan(x), fill[j], x)
        else:
            out[:, j] = [1.0 if r.get(name) == cat else 0.0 for r in rows]
    return out


def fit_encoding(rows: Sequence[Row], features: Sequence[tuple[str, str]]) -> Encoding:
    """The encoding fitted on the reference's fit half; `features` are (name, 'numeric'|'categorical')."""
    sources: list[tuple[str, str | None]] = []
    fill: list[float] = []
    for name, kind in features:
        if kind == "numeric":
            vals = [v for r in rows if isinstance(v := r.get(name), float)]
            if vals:
                sources.append((name, None))
                fill.append(_mean(np.asarray(vals, dtype=np.float64)))
        else:
            counts = Counter(v for r in rows if isinstance(v := r.get(name), str))
            for cat, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_CATEGORIES]:
                sources.append((name, cat))
                fill.append(0.0)
    filled = np.asarray(fill, dtype=np.float64)
    raw = _raw_matrix(rows, sources, filled)
    unit = _units(raw)
    x = raw * unit
    centre = x.mean(axis=0) if len(rows) else np.zeros(len(sources))
    scale = x.std(axis=0) if len(rows) else np.zeros(len(sources))
    keep = scale > 1e-12
    src = [s for s, k in zip(sources, keep) if k]
    return Encoding(tuple(n if c is None else f"{n}={c}" for n, c in src), tuple(src), filled[keep],
                    centre[keep], scale[keep], unit[keep])


def _units(x: np.ndarray) -> np.ndarray:
    """Per column of x, 1.0, or for a column reaching 2**500 in magnitude the power of two that brings its
    largest value into [0.5, 1) (an exact scaling)."""
    big = np.max(np.abs(x), axis=0, initial=0.0)
    huge = big >= _BIG
    return np.where(huge, np.ldexp(1.0, -np.frexp(np.where(huge, big, 1.0))[1]), 1.0)  # no ldexp overflow


def _mean(v: np.ndarray) -> float:
    """np.mean, computed on values scaled by a power of two when they are huge (so ±1.79e308 do not overflow)."""
    unit = float(_units(v[:, None])[0])
    return float(np.mean(v * unit)) / unit


def encode(rows: Sequence[Row], enc: Encoding) -> np.ndarray:
    """Rows as standardised vectors (n × columns), clipped to ±Z_MAX (a window value far outside the reference's
    scale overflows to inf otherwise)."""
    with np.errstate(over="ignore"):
        z = (_raw_matrix(rows, enc.sources, enc.fill) * enc.unit - enc.centre) / enc.scale
    return np.clip(z, -Z_MAX, Z_MAX)


def principal_components(z: np.ndarray, variance: float) -> tuple[np.ndarray, np.ndarray]:
    """(components d × p, explained variance ratios of all p, largest first) of the data: the fewest components
    whose explained variance reaches `variance`. From the eigenvectors of the p × p covariance (cheap: p is the
    number of encoded columns, a few dozen)."""
    c = z - z.mean(axis=0)
    values, vectors = np.linalg.eigh(c.T @ c)
    order = np.argsort(values)[::-1]
    values, vectors = np.clip(values[order], 0.0, None), vectors[:, order]
    total = float(values.sum())
    ratio = values / total if total > 0 else np.zeros_like(values)
    d = int(np.searchsorted(np.cumsum(ratio), variance - 1e-12) + 1)
    return vectors[:, :min(d, len(values))].T, ratio


def reconstruction_errors(z: np.ndarray, components: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """Euclidean distance of each row to its projection on the components (through `centre`)."""
    c = z - centre
    return np.linalg.norm(c - (c @ components.T) @ components, axis=1)


def permutation_p(a: np.ndarray, b: np.ndarray, permutations: int, seed: int = 0) -> tuple[float, float]:
    """Two-sided permutation p-value of |mean(b) − mean(a)|, and the observed difference."""
    pooled = np.concatenate([a, b])
    n, m = len(pooled), len(b)
    total = float(pooled.sum())
    observed = float(b.mean() - a.mean())
    rng = np.random.default_rng(seed)
    hits = 0
    tol = 1e-12 * max(1.0, abs(observed))
    done = 0
    while done < permutations:
        size = min(CHUNK, permutations - done)
        idx = rng.random((size, n)).argpartition(m, axis=1)[:, :m] if m < n else np.tile(np.arange(n), (size, 1))
        sb = pooled[idx].sum(axis=1)
        diff = sb / m - (total - sb) / (n - m)
        hits += int(np.count_nonzero(np.abs(diff) >= abs(observed) - tol))
        done += size
    return (1 + hits) / (1 + permutations), observed


def permutations_for(alpha: float) -> int:
    """Enough permutations that p can fall to alpha/10 (p ≥ 1/(B+1)): at least 999, at most 19999."""
    return int(min(19_999, max(PERMUTATIONS, math.ceil(10 / alpha) - 1)))


@dataclass(frozen=True, slots=True)
class MultivariateResult:
    """The reconstruction-error drift of a window's sample against the reference's, with its evidence."""

    error: float | None
    reference_error: float | None
    ratio: float | None
    p_value: float | None
    drifted: bool | None
    alpha: float
    n_window: int
    n_fit: int
    n_calibration: int
    columns: tuple[str, ...]
    components: int
    explained: float | None
    permutations: int
    noise_floor: float | None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"method": "pca_reconstruction", "error": self.error, "reference_error": self.reference_error,
                "ratio": self.ratio, "p_value": self.p_value, "drifted": self.drifted, "alpha": self.alpha,
                "n": {"window": self.n_window, "reference_fit": self.n_fit,
                      "reference_calibration": self.n_calibration},
                "columns": list(self.columns), "components": self.components, "explained_variance": self.explained,
                "permutations": self.permutations, "noise_floor": self.noise_floor, "note": self.note}


def multivariate_drift(reference: Sequence[Row], window: Sequence[Row], features: Sequence[tuple[str, str]],
                       alpha: float, variance: float = 0.65, permutations: int | None = None,
                       seed: int = 0) -> MultivariateResult:
    """PCA reconstruction-error drift of `window` rows against `reference` rows (both in hash order)."""
    fit, cal = list(reference[0::2]), list(reference[1::2])
    b = permutations_for(alpha) if permutations is None else permutations
    base = dict(alpha=alpha, n_window=len(window), n_fit=len(fit), n_calibration=len(cal), permutations=b)
    if min(len(fit), len(cal), len(window)) < MIN_ROWS:
        return MultivariateResult(None, None, None, None, None, columns=(), components=0, explained=None,
                                  noise_floor=None, note=f"fewer than {MIN_ROWS} sampled rows in the window or "
                                  "in a half of the reference sample", **base)
    enc = fit_encoding(fit, features)
    if len(enc.columns) < 2:
        return MultivariateResult(None, None, None, None, None, columns=enc.columns, components=0, explained=None,
                                  noise_floor=None, note="fewer than 2 varying feature columns in the reference",
                                  **base)
    zf = encode(fit, enc)
    comps, ratio = principal_components(zf, variance)
    centre = zf.mean(axis=0)
    e_cal = reconstruction_errors(encode(cal, enc), comps, centre)
    e_win = reconstruction_errors(encode(window, enc), comps, centre)
    p, diff = permutation_p(e_cal, e_win, b, seed)
    ref_err, err = float(e_cal.mean()), float(e_win.mean())
    floor = _noise_floor(e_cal, len(window), alpha)
    return MultivariateResult(err, ref_err, err / ref_err if ref_err > 0 else None, p, p < alpha,
                              columns=enc.columns, components=len(comps),
                              explained=float(ratio[:len(comps)].sum()), noise_floor=floor, **base)


def _noise_floor(e_cal: np.ndarray, m: int, alpha: float) -> float:
    """Normal-approximation half-width of |window mean − reference mean| at alpha (shown next to the exact
    permutation p-value, in reconstruction-error units)."""
    from scipy.special import ndtri

    n = len(e_cal)
    return float(ndtri(1 - alpha / 2) * e_cal.std(ddof=1) * math.sqrt(1 / m + 1 / n))
