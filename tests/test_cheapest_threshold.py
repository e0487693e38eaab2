"""The report's cost-optimal row and cheapest threshold are exact where the week's scores are held, and say they
are grid values where not.

Churn tryout: the cost-optimal threshold C_FP / (C_FP + C_FN) = 0.0385 had its row counted at the score-grid edge
0.0388, and the only cheapest threshold was the best of 0.1 … 0.9; nothing said either was a grid value. Checked
against a brute force over every threshold (numpy, the counts at each, priced with analysis.costs.business_kpis).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from driftline import cli
from driftline.analysis.cheapest import cheapest_exact, cheapest_on_grid
from driftline.analysis.costs import Costs, business_kpis
from driftline.core.grids import SCORE_EDGES

from helpers import outcome, pred

START = 1_780_272_000.0  # Monday 2026-06-01 (2026-W23)
COSTS = {"currency": "EUR", "monthly_volume": 100000, "missed_positive": 300, "review_per_flag": 100}
UNIT = Costs(fn_cost=300.0, review_cost=100.0)
OPTIMAL = 100 / (100 + 300)  # 0.25, between the grid edges 0.24974 and 0.25162


def _brute(scores: np.ndarray, labels: np.ndarray, thresholds: np.ndarray, prevalence: float,
           unit: Costs = UNIT, volume: float = 100000.0) -> tuple[float, float]:
    """The cheapest of `thresholds` (highest among equal totals), one business_kpis call each."""
    best = (np.inf, -1.0)
    y = labels.astype(bool)
    for t in thresholds:
        flag = scores >= t
        recall = (flag & y).sum() / y.sum()
        fpr = (flag & ~y).sum() / (~y).sum()
        total = business_kpis(volume, prevalence, recall, fpr, unit).total
        if total < best[0] or (total == best[0] and t > best[1]):
            best = (total, float(t))
    return best


def test_the_exact_search_equals_a_brute_force_over_every_threshold() -> None:
    rng = np.random.default_rng(11)
    for trial in range(5):
        n = 400
        y = rng.random(n) < 0.25
        s = np.round(1 / (1 + np.exp(-rng.normal(np.where(y, 0.8, -1.2), 1.0))), 3)  # rounded: ties too
        unit = Costs(fn_cost=float(rng.uniform(50, 500)), review_cost=float(rng.uniform(5, 100)),
                     complaint_rate=0.05, complaint_cost=float(rng.uniform(0, 50)), model_cost_per_prediction=0.002)
        prev = float(y.mean())
        fine = np.concatenate((np.linspace(0.0, 1.0, 2001), s))  # every score, and every 0.0005 between
        total, t = _brute(s, y, fine, prev, unit)
        got = cheapest_exact(s, y, 100000.0, prev, unit)
        assert got is not None and got.exact
        assert got.total == pytest.approx(total, rel=1e-12)
        flag = s >= got.threshold
        assert (flag & y).sum() == (s >= t)[y].sum() and (flag & ~y).sum() == (s >= t)[~y].sum()
        # the grid search: the best edge, by the same brute force restricted to the edges
        pos_hist = np.bincount(np.clip(np.searchsorted(SCORE_EDGES, s[y], side="right") - 1, 0,
                                       len(SCORE_EDGES) - 2), minlength=len(SCORE_EDGES) - 1)
        neg_hist = np.bincount(np.clip(np.searchsorted(SCORE_EDGES, s[~y], side="right") - 1, 0,
                                       len(SCORE_EDGES) - 2), minlength=len(SCORE_EDGES) - 1)
        grid = cheapest_on_grid(neg_hist, pos_hist, 100000.0, prev, unit)
        g_total, g_t = _brute(s, y, SCORE_EDGES[:-1], prev, unit)
        assert grid is not None and not grid.exact and grid.total >= got.total - 1e-6
        assert grid.total == pytest.approx(g_total, rel=1e-12) and grid.threshold == g_t
        i = int(np.searchsorted(SCORE_EDGES, g_t))
        assert grid.grid_step == max(SCORE_EDGES[i] - SCORE_EDGES[i - 1], SCORE_EDGES[i + 1] - SCORE_EDGES[i])


def _week(tmp_path, horizon: str, expire: bool) -> tuple[dict, str, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    scores, labels, lines = [], [], []
    for i in range(6 * 24 * 3):  # every 20 minutes for six days
        y = int(rng.random() < 0.25)
        s = float(np.round(1 / (1 + np.exp(-rng.normal(0.8 if y else -1.2, 1.0))), 4))
        if i % 40 == 0:
            y, s = 0, 0.2505  # at or above the cost-optimal 0.25, below its grid edge 0.25162
        ts = START + i * 1200
        scores.append(s)
        labels.append(y)
        lines += [pred(f"c{i}", s, ts, model="churn"), outcome(f"c{i}", y, ts + 3600)]
    if expire:  # a prediction past the horizon: the week's join rows expire, only the histograms stay
        lines.append(pred("late", 0.5, START + 20 * 86400, model="churn"))
    lines.sort(key=lambda raw: json.loads(raw)["ts"])
    (tmp_path / "e.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"model": "churn", "threshold": 0.3, "labels": {"horizon": horizon},
                                   "costs": COSTS}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*base, "replay", str(tmp_path / "e.jsonl"), "--json"]) == 0
    assert cli.main([*base, "report", "--week", "2026-W23", "--out", str(tmp_path / "r")]) == 0
    doc = json.loads((tmp_path / "r" / "report-churn-2026-W23.json").read_text())
    md = " ".join((tmp_path / "r" / "report-churn-2026-W23.md").read_text().split())
    return doc["thresholds"], md, np.array(scores), np.array(labels)


def test_the_report_prices_thresholds_exactly_while_the_scores_are_held(tmp_path, capsys) -> None:
    t, md, s, y = _week(tmp_path, "90d", expire=False)
    row = t["cost_optimal_row"]
    flag = s >= OPTIMAL
    assert row["grid_edge"] is None
    assert row["counts"] == {"tp": int((flag & (y == 1)).sum()), "fp": int((flag & (y == 0)).sum()),
                             "fn": int((~flag & (y == 1)).sum()), "tn": int((~flag & (y == 0)).sum())}
    total, threshold = _brute(s, y, np.concatenate((s, [1.0])), float(y.mean()))
    c = t["cost_minimum"]
    assert c["exact"] is True and c["grid_step"] is None and c["searched"] == "every held score"
    assert c["threshold"] == threshold and abs(c["total"] - total) < 1e-6 * total
    assert c["monthly"]["total"] == c["total"]
    assert (f"Cheapest threshold on this week's labels: {threshold:g} (exact: every threshold searched") in md
    assert "counted at the score-grid edge" not in md


def test_without_the_scores_the_report_says_the_values_are_on_the_grid(tmp_path) -> None:
    t, md, s, y = _week(tmp_path, "7d", expire=True)
    row = t["cost_optimal_row"]
    assert row["grid_edge"] == float(SCORE_EDGES[np.searchsorted(SCORE_EDGES, OPTIMAL)])  # 0.25162
    assert f"(at it, counted at the score-grid edge {row['grid_edge']:g}, the nearest at or above it" in md
    c = t["cost_minimum"]
    total, threshold = _brute(s, y, SCORE_EDGES[:-1], float(y.mean()))
    assert c["exact"] is False and c["searched"] == "score-grid edges"
    assert c["threshold"] == threshold and abs(c["total"] - total) < 1e-6 * total
    assert f"Cheapest threshold on this week's labels: {threshold:g} (the best score-grid edge, a grid of step " in md
