"""Drift names a category that vanished from the window, not only its PSI.

Tryout: category `d` held 0.100 of the reference's values and none of the window's 11,354; `drift` said
`cat_vanish … drifted yes` and nothing named `d` (the `new values` line exists only for categories that appear).
A top category of a 5,000-value id that happens to be absent is no news, so the absence must be significant.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import binomtest

from driftline import cli

from helpers import churn_with_reference, pred

DAY = 86400.0
START = 1_780_272_000.0  # 2026-06-01T00:00:00Z


def _cat(bins: list[tuple[str, float, float]], n_r: int, n_c: int) -> dict[str, object]:
    return {"kind": "categorical", "n_reference": n_r, "n_current": n_c,
            "bins": [{"bin": b, "reference": r, "current": c} for b, r, c in bins]}


def test_only_a_significant_absence_is_named() -> None:
    from driftline.readouts.drift_notes import with_vanished
    # 14 of 22,708 in the reference, 0 of 11,354: all 14 in the reference has p (2/3)**14 = 0.0034, above
    # alpha / 3 named categories = 0.0033, so it stays unnamed; 2,273 of them, none in the window, is news
    rare = _cat([("u1", 14 / 22708, 0.0), ("u2", 0.5, 0.5), ("u3", 0.3, 0.4), ("(other)", 0.2, 0.1), ("(missing)", 0, 0)],
                22708, 11354)
    assert with_vanished([rare], 0.01)[0]["vanished_values"] == []
    gone = _cat([("a", 0.5, 0.6), ("d", 2273 / 22708, 0.0), ("(other)", 0.4, 0.4), ("(missing)", 0, 0)], 22708, 11354)
    (v,) = with_vanished([gone], 0.01)[0]["vanished_values"]
    # the exact conditional p equals the binomial test of 0 of 2,273 in the window at its share of all values
    p = binomtest(0, 2273, 11354 / (22708 + 11354), alternative="less").pvalue
    assert v["value"] == "d" and v["reference_count"] == 2273 and v["p_value"] == pytest.approx(p, rel=1e-9)
    assert v["expected"] == pytest.approx(2273 / 22708 * 11354)


def test_drift_names_a_vanished_category(tmp_path, capsys) -> None:
    rng = np.random.default_rng(1)
    lines, ref_d, cur_n = [], 0, 0
    for i in range(14 * 24 * 4):  # two weeks, a prediction every 15 minutes; `legacy` retired after week one
        ts = START + i * 900
        late = ts >= START + 7 * DAY
        plan = str(rng.choice(["basic", "standard"] if late else ["basic", "standard", "legacy"]))
        ref_d += plan == "legacy"
        cur_n += late
        lines.append(pred(f"c{i}", 0.1, ts, model="churn", features={"plan": plan}))
    base = churn_with_reference(tmp_path, lines)
    capsys.readouterr()
    assert cli.main([*base, "drift", "--model", "churn", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["features"][0]
    (v,) = plan["vanished_values"]
    assert v["value"] == "legacy" and v["reference_count"] == ref_d and v["expected"] == pytest.approx(ref_d / 672 * cur_n)
    assert cli.main([*base, "drift", "--model", "churn"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert (f"vanished values: plan: none in the window's 672 values: legacy ({ref_d / 672:.3f} of the reference, "
            f"~{round(v['expected']):,} expected)") in text
    rep = tmp_path / "reports"
    assert cli.main([*base, "report", "--model", "churn", "--week", "2026-W24", "--out", str(rep)]) == 0
    assert "**Vanished values** of plan (none among the week's 672 values): legacy (" in \
        (rep / "report-churn-2026-W24.md").read_text()
    assert '<p class="vanished-values"><b>Vanished values</b> of plan' in (rep / "report-churn-2026-W24.html").read_text()
