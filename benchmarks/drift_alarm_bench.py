"""False pages of a drift trigger on calm data (ARL) and the delay to page on seeded drifts (issue 15 §4).

Usage: python benchmarks/drift_alarm_bench.py [--days 365] [--per-day 5000] [--seed 1]

Simulates hourly buckets of a model's traffic with the 8 feature kinds of tests/drift_sim.py (9 features), a
reference of 14 calm days, and the trigger `drifted > 0` over a rolling 7-day window. The default schedule
evaluates every minute, but a window is whole buckets, so within an hour every evaluation sees the same data:
one drift report per hour is exactly what the service judges. The observation series is fed to the real
trigger state machine (triggers.model.replay) for several `for:` durations, so the same reports give:
  - calm: the false pages over `--days` simulated days and the average run length (days per false page);
  - drift: amount ×1.6, a country shift (0.15 of the traffic moved from the first country to the second) and
    the amount 40 % missing, each starting after 14 calm days in the window: hours from the drift's start to
    the page.
Prints the per-report false-alarm share as well (hourly reports on calm data calling anything drifted).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import deque
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from drift_sim import KINDS, feature  # noqa: E402

from driftline.analysis.drift import drift_report  # noqa: E402
from driftline.analysis.drift_results import DriftThresholds  # noqa: E402
from driftline.analysis.profiles import build_profile  # noqa: E402
from driftline.core.stats import FeatureHist  # noqa: E402
from driftline.triggers.model import NOTICE_FIRING, Observation, Rule, replay  # noqa: E402

HOUR = 3600.0
WINDOW_H = 7 * 24
FORS = (0.0, 6 * HOUR, 12 * HOUR, 24 * HOUR)
NAMES = [f"{KINDS[i % len(KINDS)]}_{i}" for i in range(9)]


def hour_bucket(rng: np.random.Generator, n: int, drift: dict[str, float]) -> dict[str, FeatureHist]:
    """One hour of traffic: every feature's histogram (drift knobs act on the amount and country features)."""
    return {name: feature(rng, KINDS[i % len(KINDS)], n, **drift) for i, name in enumerate(NAMES)}


def _shift(total: dict[str, FeatureHist], h: dict[str, FeatureHist], sign: int) -> None:
    for name, fh in h.items():
        t = total.setdefault(name, FeatureHist())
        for k, v in fh.num.items():
            t.num[k] = t.num.get(k, 0) + sign * v
        for c, v in fh.cat.items():
            t.cat[c] = t.cat.get(c, 0) + sign * v
        t.missing += sign * fh.missing


def observations(rng: np.random.Generator, per_hour: int, hours: int, drift: dict[str, float],
                 drift_from: int, profile, cfg: DriftThresholds) -> list[tuple[float, Observation]]:
    """The trigger's hourly observations (number of features called drifted) over a rolling 7-day window."""
    total: dict[str, FeatureHist] = {}
    win: deque[dict[str, FeatureHist]] = deque()
    out = []
    for h in range(hours):
        b = hour_bucket(rng, per_hour, drift if h >= drift_from else {})
        win.append(b)
        _shift(total, b, 1)
        if len(win) > WINDOW_H:
            _shift(total, win.popleft(), -1)
        if len(win) < WINDOW_H:
            continue
        feats = {k: FeatureHist({i: c for i, c in v.num.items() if c}, {c: n for c, n in v.cat.items() if n},
                                v.missing) for k, v in total.items()}
        r = drift_report(profile, feats, None, None, cfg)
        out.append((h * HOUR, Observation(float(len(r.drifted)), n=per_hour * WINDOW_H)))
    return out


def pages(series: list[tuple[float, Observation]], for_s: float) -> list[float]:
    """Times at which `drifted > 0` with this `for:` starts firing (cooldown 1h, as the example triggers)."""
    rule = Rule("drift", "drifted", ">", 0.0, window_s=WINDOW_H * HOUR, min_n=30, for_s=for_s, cooldown_s=HOUR)
    return [e.notice.at for e in replay(rule, series) if e.notice is not None and e.notice.kind == NOTICE_FIRING]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=float, default=365)
    ap.add_argument("--per-day", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    per_hour = max(1, a.per_day // 24)
    ref: dict[str, FeatureHist] = {}
    for _ in range(14 * 24):
        for name, fh in hour_bucket(rng, per_hour, {}).items():
            ref.setdefault(name, FeatureHist()).add(fh)
    profile = build_profile(ref)
    cfg = DriftThresholds()
    t0 = time.perf_counter()
    calm = observations(rng, per_hour, int(a.days * 24) + WINDOW_H, {}, 10**9, profile, cfg)
    secs = time.perf_counter() - t0
    share = np.mean([o.value > 0 for _, o in calm])
    print(f"calm: {a.per_day}/day, {len(calm)} hourly reports ({secs / len(calm) * 1000:.0f} ms each), "
          f"{share:.2%} call anything drifted (alpha {cfg.alpha})")
    days = len(calm) / 24
    for f in FORS:
        n = len(pages(calm, f))
        arl = f"{days / n:.0f} days per false page" if n else f"no false page in {days:.0f} days (ARL > {days / 3:.0f} d at 95 %)"
        print(f"  for {f / HOUR:>4.0f}h: {n} false pages → {arl}")
    for label, drift in (("amount x1.6", {"amount_scale": 1.6}), ("country shift 0.15", {"country_shift": 0.15}),
                         ("amount 40 % missing", {"missing": 0.40})):
        series = observations(rng, per_hour, WINDOW_H + 10 * 24, drift, WINDOW_H, profile, cfg)
        start = WINDOW_H * HOUR
        delays = []
        for f in FORS:
            p = [t for t in pages(series, f) if t >= start]
            delays.append("not paged in 10 days" if not p else f"{(p[0] - start) / HOUR:.0f} h")
        print(f"drift {label}: hours from start to page for {', '.join(f'{f / HOUR:.0f}h' for f in FORS)}: "
              f"{', '.join(delays)}")


if __name__ == "__main__":
    main()
