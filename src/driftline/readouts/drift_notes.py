"""Notes under the drift table computed from a report: categories that vanished from the window, and the window's
features the reference does not have, with their counts."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..analysis.profiles import CATEGORICAL, MISSING, OTHER
from ..core.stats import FeatureHist


def with_vanished(features: list[dict[str, Any]], alpha: float) -> list[dict[str, Any]]:
    """Each categorical feature with `vanished_values`: its top reference categories that the window lacks, when
    that absence is significant: with a of them among the reference's n_r values and none among the window's n_c,
    the exact conditional p that all a fell in the reference, (n_r/(n_r+n_c))**a, is below alpha / the feature's
    named categories (Bonferroni: a top-20 category of a 5,000-value id missing from a window is no news)."""
    for f in features:
        if f["kind"] != CATEGORICAL:
            continue
        n_r, n_c = f["n_reference"] or 0, f["n_current"] or 0
        named = [b for b in f["bins"] if b["bin"] not in (OTHER, MISSING)]
        gone = []
        for b in named:
            if b["current"] == 0 and b["reference"] and n_r and n_c:
                a = round(b["reference"] * n_r)
                p = math.exp(a * math.log(n_r / (n_r + n_c)))
                if p < alpha / len(named):
                    gone.append({"value": b["bin"], "reference_share": b["reference"], "reference_count": a,
                                 "expected": b["reference"] * n_c, "p_value": p})
        f["vanished_values"] = sorted(gone, key=lambda d: (-d["expected"], d["value"]))
    return features


def untracked_values(names: tuple[str, ...], features: Mapping[str, FeatureHist], n: int) -> list[dict[str, Any]]:
    """Each window feature the reference does not have, with its values and their share of the window's predictions:
    a field that appeared after the reference is not compared, and how much of the traffic carries it is said."""
    out = []
    for name in names:
        fh = features[name]
        k = fh.total - fh.missing
        out.append({"feature": name, "values": k, "share": k / n if n else None})
    return sorted(out, key=lambda d: (-d["values"], d["feature"]))
