"""Input-distribution drift of a current window against a reference profile: features, score, prevalence.

Per feature, on the profile's frozen bins: PSI (proportions floored at 1e-4 before the log) and
Jensen–Shannon distance (base 2); categorical features get a χ² test (missing is one of its bins);
numeric features (and the score) get KS on the fine-grid CDFs, a normalised Wasserstein distance and
a χ² test of their [numeric, non-numeric, missing] shares. p-values are Benjamini–Hochberg adjusted
together (features, score, prevalence: one family per report).

KS: `stat` is the two-sample KS of the fine-binned samples (exactly ks_2samp on bin representatives);
the raw-data KS lies in [stat, stat_upper] and stat_upper ≤ stat + the largest one-fine-bin mass of
either sample. `stat_frozen` (frozen-bin CDFs) ≤ stat. p-value: ks_2samp's asymptotic distribution
(kstwo at n_eff = n·m/(n+m); Stephens' form above n_eff = 1000). Wasserstein: W1 between the binned
distributions at fine-bin midpoints, divided by the reference standard deviation (same binning).

Noise floors (95th percentile of each statistic under no drift at these sample sizes): PSI and JS by
`floor_draws` seeded multinomial resamples of both samples from the reference proportions; KS and χ²
are their 5 % critical values; W by the Brownian-bridge limit √(1/n+1/m)·q95(∫|B(F_ref)|dx), the
coefficient computed once per profile. `psi_expected` is the analytic mean (k−1)(1/n_ref + 1/n_cur).

Calling drift (documented defaults in DriftThresholds): a feature is `drifted` when
  effect: PSI ≥ 0.1 or JS ≥ 0.1 (or normalised W ≥ its threshold, if set), counting a statistic only
          when it is also above its noise floor, and
  evidence: one of its tests (KS or missing-share χ² for numeric, χ² for categorical) has
          BH-adjusted p < alpha (0.01: the per-report false-alarm rate; χ² tables with an expected count
          below 5 get a seeded Monte-Carlo permutation p-value, the asymptotic one being too small there).
Severity "alert" when drifted with PSI ≥ 0.25 (above its floor), "warning" when drifted otherwise,
"none" when not drifted. Requiring both keeps small windows (noise) and very large windows
(significant but negligible shifts) from raising false alarms.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from ..core.stats import NEG, POS, FeatureHist, absent_as_missing
from . import drift_stats as ds
from .drift_results import DriftResult, DriftThresholds, FeatureDrift, HypothesisTest, NoiseFloor, PrevalenceDrift
from .fine_grid import GRID_FEATURE, FineSample, fine_sample, grid_mids, score_sample
from .profiles import (
    CATEGORICAL, NUMERIC, CategoricalProfile, NumericProfile, Profile, rebin, rebin_sample, unseen_count, unseen_values,
)
from .rates import rate

SEVERITIES = ("none", "warning", "alert")


# --- per feature ----------------------------------------------------------------------------------
def _rng(cfg: DriftThresholds, name: str) -> np.random.Generator:
    return np.random.default_rng([cfg.seed, zlib.crc32(name.encode())])


def _share(k: int, n: int) -> float | None:
    return k / n if n else None


def _succession(counts: np.ndarray, open_bins: tuple[int, ...]) -> np.ndarray:
    """Reference proportions where each empty bin in `open_bins` gets the rule-of-succession mass 1/(n+1).

    A bin the reference left empty by chance (no missing value among n, say) can still receive values
    under no drift; giving it the chance of one more observation keeps the noise floor honest.
    """
    n = int(counts.sum())
    p = counts / n
    empty = [b for b in open_bins if counts[b] == 0]
    if empty:
        p = p * (1.0 - len(empty) / (n + 1))
        p[empty] = 1.0 / (n + 1)
    return p


def _frozen_stats(ref: np.ndarray, cur: np.ndarray, p_ref_null: np.ndarray, p_cur_null: np.ndarray,
                  cfg: DriftThresholds, rng: np.random.Generator) -> tuple[float, float, NoiseFloor]:
    n_r, n_c = int(ref.sum()), int(cur.sum())
    psi_floor, js_floor = ds.multinomial_floors(p_ref_null, p_cur_null, n_r, n_c, cfg.floor_draws, rng, cfg.psi_eps)
    floor = NoiseFloor(psi=psi_floor, js=js_floor,
                       psi_expected=ds.psi_expected(int(np.count_nonzero(ref)), n_r, n_c))  # k: bins populated
    return float(ds.psi(ref, cur, cfg.psi_eps)), float(ds.js_distance(ref, cur)), floor


def _chi2(ref: np.ndarray, cur: np.ndarray, rng: np.random.Generator) -> HypothesisTest | None:
    c2 = ds.chi2_test_sparse(ref, cur, rng)
    return HypothesisTest(c2.stat, c2.p_value, dof=c2.dof) if c2.dof > 0 else None


def numeric_drift(p: NumericProfile, cur: FineSample, cfg: DriftThresholds = DriftThresholds()) -> FeatureDrift:
    """Drift of a numeric feature (or the score) given the current fine sample; p-values not yet adjusted."""
    ref_b, cur_b = p.ref_counts, rebin_sample(p, cur)
    ref_s = p.fine
    base = FeatureDrift(p.feature, NUMERIC, ref_s.total, cur.total, bins=p.labels,
                        ref_counts=tuple(ref_b.tolist()), cur_counts=tuple(cur_b.tolist()),
                        missing_reference=_share(ref_s.missing, ref_s.total),
                        missing_current=_share(cur.missing, cur.total),
                        unseen_share=_share(int(cur_b[0] + cur_b[-3]), cur.n_numeric))
    if ref_s.total == 0 or cur.total == 0:
        return base
    rng = _rng(cfg, p.feature)
    # No-drift model: reference proportions (empty other/missing bins of a feature get the 1/(n+1)
    # succession mass); the current sample also has the 1/(n+1) chance per side of a value below the
    # reference minimum / above its maximum (exact for continuous values; the reference has none there).
    n_num = ref_s.n_numeric
    p_ref = _succession(ref_b, (-2, -1) if p.grid == GRID_FEATURE else ())
    p_cur = p_ref.copy()
    if n_num:
        share = float(p_ref[1:-3].sum())
        p_cur[1:-3] *= 1.0 - 2.0 / (n_num + 1)
        p_cur[0] = p_cur[-3] = share / (n_num + 1)
    psi_v, js_v, floor = _frozen_stats(ref_b, cur_b, p_ref, p_cur, cfg, rng)
    presence = _chi2(np.array([n_num, ref_s.other, ref_s.missing]), np.array([cur.n_numeric, cur.other, cur.missing]),
                     rng)
    ks = wass = None
    if n_num and cur.n_numeric:
        k = ds.ks_fine(ref_s.idx, ref_s.counts, cur.idx, cur.counts)
        num = slice(0, len(ref_b) - 2)
        ks = HypothesisTest(k.stat, ds.ks_p_value(k.stat, n_num, cur.n_numeric),
                            stat_frozen=ds.ks_cdf_stat(ref_b[num], cur_b[num]), stat_upper=k.upper,
                            n_effective=ds.ks_n_effective(n_num, cur.n_numeric))
        floor = replace(floor, ks=ds.ks_critical(n_num, cur.n_numeric))
        _, std = p.mean_std()
        if std:
            x_r = grid_mids(p.grid, ref_s.idx)
            wass = ds.wasserstein_binned(x_r, ref_s.counts, grid_mids(p.grid, cur.idx), cur.counts) / std
            floor = replace(floor, wasserstein=p.w_noise * float(np.sqrt(1.0 / n_num + 1.0 / cur.n_numeric)) / std)
    return replace(base, psi=psi_v, js=js_v, ks=ks, missing_test=presence, wasserstein=wass, noise_floor=floor)


def categorical_drift(p: CategoricalProfile, fh: FeatureHist | None,
                      cfg: DriftThresholds = DriftThresholds()) -> FeatureDrift:
    """Drift of a categorical feature on its top-K/other/missing bins; p-value not yet adjusted."""
    ref_b, cur_b = p.counts, rebin(p, fh)
    n_r, n_c = int(ref_b.sum()), int(cur_b.sum())
    unseen, new_values = None, ()
    if fh is not None:
        k_new, n_present = unseen_count(p, fh)
        unseen, new_values = _share(k_new, n_present), unseen_values(p, fh)
    base = FeatureDrift(p.feature, CATEGORICAL, n_r, n_c, bins=p.labels,
                        ref_counts=tuple(ref_b.tolist()), cur_counts=tuple(cur_b.tolist()),
                        missing_reference=_share(int(ref_b[-1]), n_r), missing_current=_share(int(cur_b[-1]), n_c),
                        unseen_share=unseen, unseen_values=new_values,
                        unseen_bound=(len(p.seen), p.distinct) if p.seen_truncated else None)
    if n_r == 0 or n_c == 0:
        return base
    p_null = _succession(ref_b, (-2, -1))
    rng = _rng(cfg, p.feature)
    psi_v, js_v, floor = _frozen_stats(ref_b, cur_b, p_null, p_null, cfg, rng)
    chi = _chi2(ref_b, cur_b, rng)
    floor = replace(floor, chi2=None if chi is None else ds.chi2_critical(chi.dof))
    return replace(base, psi=psi_v, js=js_v, chi2=chi, noise_floor=floor)


def classify(f: FeatureDrift, cfg: DriftThresholds) -> FeatureDrift:
    """Set drifted/severity from effect sizes beyond threshold and noise floor plus BH-adjusted evidence."""
    nf = f.noise_floor

    def beyond(v: float | None, thr: float | None, floor: float | None) -> bool:
        return v is not None and thr is not None and v >= thr and (floor is None or v > floor)

    effect = (beyond(f.psi, cfg.psi_warning, nf.psi) or beyond(f.js, cfg.js, nf.js)
              or beyond(f.wasserstein, cfg.wasserstein, nf.wasserstein))
    evidence = any(t.p_adjusted is not None and t.p_adjusted < cfg.alpha for t in f.tests())
    drifted = effect and evidence
    severity = "none" if not drifted else "alert" if beyond(f.psi, cfg.psi_alert, nf.psi) else "warning"
    return replace(f, drifted=drifted, severity=severity)


def adjust(results: list[FeatureDrift], extra: list[float | None] | None = None
           ) -> tuple[list[FeatureDrift], list[float | None]]:
    """Benjamini–Hochberg over every KS, χ² and missing-share p-value of these results plus `extra` (one family)."""
    names = ("ks", "chi2", "missing_test")
    slots = [(i, name) for i, f in enumerate(results) for name in names if getattr(f, name) is not None]
    extra = list(extra or [])
    adj = ds.bh_adjust([getattr(results[i], name).p_value for i, name in slots] + extra)
    out = list(results)
    for (i, name), a in zip(slots, adj):
        out[i] = replace(out[i], **{name: replace(getattr(out[i], name), p_adjusted=a)})
    return out, adj[len(slots):]


def rank_key(f: FeatureDrift) -> tuple[int, float, float, str]:
    """Sort key: severity (alert first), then PSI, then JS (largest first), then name."""
    return (-SEVERITIES.index(f.severity), -(f.psi if f.psi is not None else -1.0),
            -(f.js if f.js is not None else -1.0), f.feature)


def prevalence_drift(positives_ref: int, labelled_ref: int, conf: np.ndarray | None,
                     cfg: DriftThresholds = DriftThresholds(), p_adjusted: float | None = None) -> PrevalenceDrift:
    """Current prevalence among labelled predictions (Wilson) against the reference.

    p_adjusted: the BH-adjusted p-value from the report's family (default: the raw p-value).
    """
    c = np.zeros((3, 2), np.int64) if conf is None else np.asarray(conf, dtype=np.int64)
    k, n = int(c[POS].sum()), int(c[POS].sum() + c[NEG].sum())
    cur = rate(k, n)
    ref_v = positives_ref / labelled_ref if labelled_ref else None
    if n == 0 or ref_v is None:
        return PrevalenceDrift(ref_v, labelled_ref, cur, None)
    d = ds.newcombe_diff(k, n, positives_ref, labelled_ref)
    test = ds.chi2_test_sparse(np.array([positives_ref, labelled_ref - positives_ref]), np.array([k, n - k]),
                               _rng(cfg, "\x00prevalence"))
    p = test.p_value if test.dof > 0 else None
    p_adj = p if p_adjusted is None else p_adjusted
    material = abs(d[0]) >= cfg.prevalence_change * ref_v if ref_v > 0 else d[0] > 0
    drifted = material and p_adj is not None and p_adj < cfg.alpha
    return PrevalenceDrift(ref_v, labelled_ref, cur, d, p, p_adj, material, drifted)


def drift_report(profile: Profile, current_features: Mapping[str, FeatureHist],
                 current_score_hist: np.ndarray | None, current_conf: np.ndarray | None,
                 config: DriftThresholds = DriftThresholds(),
                 prevalence_conf: np.ndarray | None = None) -> DriftResult:
    """Drift of a merged current window against a reference profile: ranked features, score, prevalence.

    A tracked feature's key absent from current predictions counts as missing (current_conf gives their number);
    without current_conf a feature absent from current_features has no current values (statistics None).
    One Benjamini–Hochberg family per report: every p-value of the features, the score and prevalence.
    prevalence_conf: the confusion counts prevalence is read over (default current_conf; under the implicit-negative
    policy the window's matured part, whose negatives are known).
    """
    pconf = current_conf if prevalence_conf is None else prevalence_conf
    feats: list[FeatureDrift] = []
    n_pred = None if current_conf is None else int(np.asarray(current_conf).sum())
    for p in profile.features:
        fh = current_features.get(p.feature)
        if n_pred is not None:  # predictions without the key are missing, declared feature or inferred
            fh = absent_as_missing(fh, n_pred)
        if isinstance(p, NumericProfile):
            feats.append(numeric_drift(p, fine_sample(fh), config))
        else:
            feats.append(categorical_drift(p, fh, config))
    if profile.score is not None:
        feats.append(numeric_drift(profile.score, score_sample(current_score_hist), config))
    prev = prevalence_drift(profile.positives, profile.labelled, pconf, config)
    feats, (prev_adj,) = adjust(feats, [prev.p_value])
    if prev.p_value is not None:
        prev = prevalence_drift(profile.positives, profile.labelled, pconf, config, prev_adj)
    feats = [classify(f, config) for f in feats]
    score = feats.pop() if profile.score is not None else None
    feats.sort(key=rank_key)
    tracked = {p.feature for p in profile.features}
    untracked = tuple(sorted(n for n in current_features if n not in tracked))
    return DriftResult(tuple(feats), score, prev, config, untracked)
