"""A feature called drifted by its missing share says so.

Tryout: a numeric feature whose values kept their distribution while its missing share went 0.396 → 0.703 read
`num_missing │ 0.3961 │ 0.2649 │ KS 0.57 │ … │ yes` — drifted beside a p of 0.57, and no line said what changed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import chi2_contingency

from driftline import cli

from helpers import churn_with_reference, pred

DAY = 86400.0
START = 1_780_272_000.0  # 2026-06-01T00:00:00Z


def test_deciding_test_is_the_smallest_adjusted_p() -> None:
    from driftline.commands.drift_render import deciding_test
    f = {"kind": "numeric", "ks": {"p_adjusted": 0.57}, "chi2": None, "missing_share": {"p_adjusted": 1e-9}}
    assert deciding_test(f) == ("missing", 1e-9)
    assert deciding_test({**f, "missing_share": {"p_adjusted": None}}) == ("KS", 0.57)
    assert deciding_test({"kind": "categorical", "ks": None, "chi2": {"p_adjusted": 0.2},
                          "missing_share": {"p_adjusted": 0.3}}) == ("χ²", 0.2)


def test_a_missing_share_change_is_named_as_the_reason(tmp_path, capsys) -> None:
    rng = np.random.default_rng(3)
    lines, counts = [], {"ref": [0, 0], "cur": [0, 0]}  # [values, missing]
    for i in range(14 * 24 * 4):  # two weeks, a prediction every 15 minutes
        ts = START + i * 900
        late = ts >= START + 7 * DAY
        missing = rng.random() < (0.6 if late else 0.1)
        counts["cur" if late else "ref"][int(missing)] += 1
        x = None if missing else float(rng.normal())
        lines.append(pred(f"c{i}", 0.1, ts, model="churn", features={"x": x, "y": float(rng.normal())}))
    base = churn_with_reference(tmp_path, lines)
    capsys.readouterr()
    assert cli.main([*base, "drift", "--model", "churn", "--json"]) == 0
    x = next(f for f in json.loads(capsys.readouterr().out)["features"] if f["feature"] == "x")
    m = x["missing_share"]
    assert m["reference"] == counts["ref"][1] / sum(counts["ref"]) and m["current"] == counts["cur"][1] / sum(counts["cur"])
    assert m["p_value"] == pytest.approx(chi2_contingency(np.array([counts["ref"], counts["cur"]]),
                                                          correction=False).pvalue, rel=1e-6)
    assert x["drifted"] and m["p_adjusted"] < 0.01 and x["ks"]["p_adjusted"] > 0.01
    assert cli.main([*base, "drift", "--model", "churn"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("│ x "))
    assert "missing <0.0001" in row and "KS" not in row and "yes" in row
    text = " ".join(out.split())
    assert (f"missing values: x: {m['reference']:.3f} of the reference's predictions → {m['current']:.3f} of the "
            "window's (p adj <0.0001)") in text
    assert "a KS, χ² or missing-share p < 0.01" in text
    rep = tmp_path / "reports"
    assert cli.main([*base, "report", "--model", "churn", "--week", "2026-W24", "--out", str(rep)]) == 0
    md = (rep / "report-churn-2026-W24.md").read_text()
    assert f"| missing {m['reference']:.3f} → {m['current']:.3f}: <0.0001 |" in md
    html = (rep / "report-churn-2026-W24.html").read_text()
    assert f'<td class="l">missing {m["reference"]:.3f} → {m["current"]:.3f}</td><td>&lt;0.0001</td>' in html
