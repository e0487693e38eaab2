"""Shadow mode under the implicit-negative policy: the paired figures that read negatives (FPR's exact McNemar test,
the paired bootstrap's precision and cost, the `cost_per_1000` it gives) come from the pairs of the window's matured
part, as each arm's FPR, precision and cost do; the paired recall test and interval read every joined pair.

Before, over the 70-day window of tests/test_matured_part.py's churn stream scored by both A and S, they read every
joined pair: the young pairs' early positives without their negatives (and the few early explicit negatives of
their most recent days), so the paired cost difference read −10,998 a thousand where each arm's own costs (matured
part) differ by −4,882, and paired precision leaned towards the positives. Hand counts, statsmodels' exact McNemar.
"""

from __future__ import annotations

import json

import numpy as np
import yaml
from statsmodels.stats.contingency_tables import mcnemar

from driftline import cli
from driftline.analysis.costs import Costs
from driftline.analysis.paired import PairedTable, paired_bootstrap

from helpers import outcome, pred
from test_matured_part import DAY, END, HOUR, START, _stream

CUT_H = 959  # the matured part's boundary, 2026-07-10T23:00:00Z (test_matured_part: by hand)
COSTS = {"currency": "EUR", "monthly_volume": 100000, "missed_positive": 100.0, "review_per_flag": 2.0}


def _s_score(h: int, j: int) -> float:
    """The shadow arm S: catches every positive; flags the negative j=1 in hours divisible by 3, j=2 by 4."""
    if j == 0:
        return 0.9
    return 0.5 if (j == 1 and h % 3 == 0) or (j == 2 and h % 4 == 0) else 0.1


def _early_negative(h: int, j: int) -> bool:
    """An explicit negative outcome reported 10 days after the prediction (j=1 in hours divisible by 7)."""
    return j == 1 and h % 7 == 0 and START + h * HOUR + 1800 + 10 * DAY < END


def _pairs(first_h: int = 30 * 24) -> list[tuple[int, int, int | None, bool, bool]]:
    """(hour, j, label in force at the end or None, flagged by A, flagged by S) of the pairs from hour `first_h` on
    (by default those of the 70-day window)."""
    out = []
    for h, j, score, y, stored in _stream():
        if h < first_h:
            continue
        label = y if h < CUT_H else (1 if y and stored else 0 if _early_negative(h, j) else None)
        out.append((h, j, label, score >= 0.3, _s_score(h, j) >= 0.3))
    return out


def _ab(tmp_path, capsys) -> dict:
    lines = []
    for h, j, score, y, stored in _stream():
        ts = START + h * HOUR + 1800
        lines.append(pred(f"c{h}-{j}", score, ts, variant="A", model="churn"))
        lines.append(pred(f"c{h}-{j}", _s_score(h, j), ts, variant="S", model="churn"))
        if stored:
            lines.append(outcome(f"c{h}-{j}", 1, ts + (30 + h % 31) * DAY))
        if _early_negative(h, j):
            lines.append(outcome(f"c{h}-{j}", 0, ts + 10 * DAY))
    lines.sort(key=lambda raw: json.loads(raw)["ts"])
    (tmp_path / "e.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    labels = {"policy": "implicit_negative_after", "implicit_negative_after": "60d", "horizon": "90d"}
    cfg.write_text(yaml.safe_dump({"model": "churn", "threshold": 0.3, "window": "70d", "labels": labels,
                                   "costs": COSTS, "ab": {"design": "shadow", "arms": {"A": 1, "S": 1},
                                                          "control": "A"}}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*base, "replay", str(tmp_path / "e.jsonl"), "--json"]) == 0
    capsys.readouterr()
    assert cli.main([*base, "ab", "--window", "70d", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _mcnemar(pairs: list, label: int) -> tuple[int, int, float]:
    """(control only, treatment only, exact McNemar p) among the pairs with this label (statsmodels)."""
    both = sum(1 for p in pairs if p[2] == label and p[3] and p[4])
    c_only = sum(1 for p in pairs if p[2] == label and p[3] and not p[4])
    t_only = sum(1 for p in pairs if p[2] == label and not p[3] and p[4])
    neither = sum(1 for p in pairs if p[2] == label and not p[3] and not p[4])
    return c_only, t_only, float(mcnemar([[both, c_only], [t_only, neither]], exact=True).pvalue)


def _arm_cost(pairs: list, old: list, k: int) -> float:
    """Cost per 1,000 of the arm flagging at index k: review 2 a flag at the whole window's alert rate, 100 a miss
    at the matured part's miss share among the unflagged (analysis.costs: r·a + c_fn·(1−a)·q)."""
    a = sum(1 for p in pairs if p[k]) / len(pairs)
    fn = sum(1 for p in old if p[2] == 1 and not p[k])
    tn = sum(1 for p in old if p[2] == 0 and not p[k])
    return 1000 * (2 * a + 100 * (1 - a) * fn / (fn + tn))


def _precision(old: list, k: int) -> float:
    tp = sum(1 for p in old if p[2] == 1 and p[k])
    return tp / sum(1 for p in old if p[k])


def test_shadow_paired_fpr_precision_and_cost_read_the_matured_pairs(tmp_path, capsys) -> None:
    doc = _ab(tmp_path, capsys)
    pairs = _pairs()
    old = [p for p in pairs if p[0] < CUT_H]
    comp = doc["comparisons"][0]
    paired = comp["paired"]
    assert paired["pairs"] == len(pairs) == 6720
    # FPR's exact McNemar: the matured negatives only (the young explicit negatives left out)
    young_negatives = sum(1 for p in pairs if p[0] >= CUT_H and p[2] == 0)
    assert young_negatives > 0
    c_only, t_only, p = _mcnemar(old, 0)
    assert (paired["fpr"]["control_only"], paired["fpr"]["treatment_only"]) == (c_only, t_only) == (80, 100)
    assert abs(paired["fpr"]["p_value"] - p) < 1e-12
    assert _mcnemar(pairs, 0)[:2] != (c_only, t_only)  # what every joined pair reads
    # recall's: every labelled positive of the window, early or matured
    c_only, t_only, p = _mcnemar(pairs, 1)
    assert (paired["recall"]["control_only"], paired["recall"]["treatment_only"]) == (c_only, t_only)
    assert abs(paired["recall"]["p_value"] - p) < 1e-12
    # the paired bootstrap: precision and cost differences of the matured part (cost: alert rate of the window),
    # equal to the arms' own precision and cost differences; recall over the whole window
    boot = paired["bootstrap"]
    prec = _precision(old, 4) - _precision(old, 3)
    assert abs(boot["precision"]["diff"] - prec) < 1e-12
    assert abs(prec - (doc["arms"]["S"]["precision"]["value"] - doc["arms"]["A"]["precision"]["value"])) < 1e-12
    cost = _arm_cost(pairs, old, 4) - _arm_cost(pairs, old, 3)
    assert abs(boot["cost_per_1000"]["diff"] - cost) < 1e-9
    assert abs(cost - (doc["arms"]["S"]["cost_per_1000"]["value"] - doc["arms"]["A"]["cost_per_1000"]["value"])) < 1e-9
    assert comp["cost_per_1000"]["method"] == "paired_bootstrap"
    assert abs(comp["cost_per_1000"]["diff"] - cost) < 1e-9
    lab_pos = [p for p in pairs if p[2] == 1]
    recall = (sum(1 for p in lab_pos if p[4]) - sum(1 for p in lab_pos if p[3])) / len(lab_pos)
    assert abs(boot["recall"]["diff"] - recall) < 1e-12
    # the intervals: the paired bootstrap (seed 0, 2,000 draws) of the ids, young ones' labels unknown for
    # precision and cost; every id's label in force for recall
    def table(young_masked: bool) -> PairedTable:
        labels = np.array([(-1 if young_masked and p[0] >= CUT_H else (-1 if p[2] is None else p[2]))
                           for p in pairs])
        return PairedTable.from_arrays(labels, np.array([p[3] for p in pairs]), np.array([p[4] for p in pairs]))
    costs = Costs(fn_cost=100.0, review_cost=2.0)
    ref = paired_bootstrap(table(True), costs, n_boot=2000, seed=0)
    for name, got in (("precision", ref.precision), ("cost_per_1000", ref.cost_per_1000)):
        assert abs(boot[name]["low"] - got.low) < 1e-9 and abs(boot[name]["high"] - got.high) < 1e-9, name
    ref = paired_bootstrap(table(False), costs, n_boot=2000, seed=0)
    assert abs(boot["recall"]["low"] - ref.recall.low) < 1e-12 and abs(boot["recall"]["high"] - ref.recall.high) < 1e-12
    mat = paired["matured"]
    assert (mat["before"], mat["pairs"], mat["young_pairs"]) == ("2026-07-10T23:00:00Z", len(old),
                                                                 len(pairs) - len(old))
    assert mat["reads"] == ["fpr", "bootstrap.precision", "bootstrap.cost_per_1000", "labels_follow_control"]
    assert any("the paired FPR test, the paired precision and cost intervals and whether labels follow the "
               "control's flags, over the pairs made before the boundary" in n
               and "before 2026-07-10T23:00:00Z (of 13,440)" in n for n in doc["notes"])


def test_a_wholly_matured_shadow_window_reads_every_pair(tmp_path, capsys) -> None:
    _ab(tmp_path, capsys)
    base = ["--config", str(tmp_path / "c.yaml"), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*base, "ab", "--window", "30d", "--at", "2026-07-10T23:00:00Z", "--json"]) == 0
    paired = json.loads(capsys.readouterr().out)["comparisons"][0]["paired"]
    old = [p for p in _pairs(CUT_H - 30 * 24) if p[0] < CUT_H]
    assert paired["matured"] is None and paired["pairs"] == len(old) == 30 * 24 * 4
    assert abs(paired["bootstrap"]["precision"]["diff"] - (_precision(old, 4) - _precision(old, 3))) < 1e-12


def test_labels_follow_control_reads_the_matured_pairs(tmp_path, capsys) -> None:
    """Over every joined pair the young pairs' early outcomes (positives, mostly flagged by A) read as labels
    following A's flags (coverage 27.6 % when A flags vs 15.8 % when not, p < 1e-29) and the verdict warned that
    "positives A misses are under-labelled, so the recall comparison is biased in favour of A", though every
    positive's outcome comes 30–60 days later whatever A decided. Over the matured pairs each pair has its label."""
    doc = _ab(tmp_path, capsys)
    follows = doc["comparisons"][0]["paired"]["labels_follow_control"]
    old = [p for p in _pairs() if p[0] < CUT_H]
    flagged = sum(1 for p in old if p[3])
    assert follows["coverage_flagged"]["n"] == flagged and follows["coverage_flagged"]["k"] == flagged
    assert follows["coverage_unflagged"]["n"] == len(old) - flagged
    assert follows["coverage_unflagged"]["k"] == len(old) - flagged
    assert follows["warning"] is False and follows["pairs"] == "matured"
    assert "labels follow" not in doc["verdict"]
