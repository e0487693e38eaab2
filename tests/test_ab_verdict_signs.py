"""Every difference in the A/B verdict is treatment − control, signed, with its intervals in the same orientation
as the readout's JSON (user tryout: "B's FPR is lower by 0.010 [0.005, 0.016]" stood beside the always-valid
"[−0.019, −0.002]" of the same difference, and the cost's fixed interval was flipped the same way)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from driftline import numbers
from driftline.commands.demo import EXAMPLE_COSTS
from driftline.config import from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.readouts.ab import ABQuery, ab_document
from driftline.storage.store import Store

from helpers import outcome, pred

T0 = 1_699_920_000.0  # a midnight UTC
WEEK = 7 * 86400.0
CONFIG = from_dict({"costs": EXAMPLE_COSTS})


def _arm(variant: str, tp: int, fn: int, fp: int, tn: int) -> list[bytes]:
    """Predictions of one arm with exactly these confusion counts, each labelled two hours later."""
    cells = [(0.9, 1)] * tp + [(0.1, 1)] * fn + [(0.9, 0)] * fp + [(0.1, 0)] * tn
    ts = T0 + np.arange(len(cells)) * (5 * 86400 / len(cells))
    raws = []
    for i, ((score, y), t) in enumerate(zip(cells, ts)):
        raws += [pred(f"{variant}-{i}", score, float(t), variant=variant),
                 outcome(f"{variant}-{i}", y, float(t) + 7200)]
    return raws


@pytest.fixture(scope="module")
def doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """B catches more positives and flags fewer genuine ones: recall higher, FPR, alert rate and cost lower
    (negative treatment − control, both intervals below 0), as in the demo's week four."""
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('ab') / 'signs.db'}")
    store.migrate()
    raws = _arm("A", 120, 30, 300, 3000) + _arm("B", 145, 5, 100, 3000)
    Pipeline(CONFIG, store, clock=lambda: T0 + 400 * 86400).process_batch(
        [RawRecord("test", 0, j, r) for j, r in enumerate(raws)])
    try:
        return ab_document(store, CONFIG, ABQuery("fraud", WEEK))
    finally:
        store.close()


def test_the_verdict_says_the_orientation_once_and_signs_every_difference(doc: dict[str, Any]) -> None:
    comp = doc["comparisons"][0]
    rec, fpr = comp["metrics"]["recall"], comp["metrics"]["fpr"]
    assert rec["diff"] > 0 and rec["seq_low"] > 0 and fpr["diff"] < 0 and fpr["seq_high"] < 0
    v = doc["verdict"]
    assert v.startswith("Differences are B − A. ") and v.count("Differences are") == 1
    assert (f"B's recall is higher than A's: {numbers.fixed(rec['diff'], 3, signed=True)} "
            f"{numbers.interval(rec['low'], rec['high'])} (fixed-horizon") in v
    assert (f"B's FPR is lower: {numbers.fixed(fpr['diff'], 3, signed=True)} "
            f"{numbers.interval(fpr['low'], fpr['high'])} (fixed-horizon") in v
    assert " by " not in v  # no unsigned magnitude "lower by 0.010"


def test_every_interval_in_the_verdict_is_one_of_the_json(doc: dict[str, Any]) -> None:
    comp = doc["comparisons"][0]
    want = set()
    for e in comp["metrics"].values():
        want |= {numbers.interval(e["low"], e["high"]), numbers.interval(e["seq_low"], e["seq_high"])}
    cd, cur = comp["cost_per_1000"], doc.get("currency")
    assert cd["diff"] < 0 and cd["high"] < 0 and cd["seq_high"] < 0
    want |= {numbers.money_interval(cd["low"], cd["high"], cur, cd["diff"]),
             numbers.money_interval(cd["seq_low"], cd["seq_high"], cur, cd["diff"])}
    found = re.findall(r"\[[^\]]*\]", doc["verdict"])
    assert len(found) >= 7 and set(found) <= want, (found, want)
    assert f"Cost per 1,000 predictions is lower for B: {numbers.money(cd['diff'], cd['low'], cd['high'], True, cur)}" \
        in doc["verdict"]


def test_the_report_template_shows_the_same_verdict(doc: dict[str, Any], tmp_path: Path) -> None:
    """The weekly report's A/B section prints the readout's verdict as it is (no second wording to drift; the
    HTML only adds line-break opportunities inside names)."""
    root = Path(__file__).resolve().parents[1] / "src" / "driftline" / "templates"
    for name in ("report.html.j2", "report.md.j2"):
        assert re.search(r"\{\{ ab\.verdict( \| idents)? \}\}", (root / name).read_text()), name


def test_a_difference_lost_to_the_holm_correction_names_the_correction(doc: dict[str, Any]) -> None:
    """Tryout: "No significant difference in FPR or precision" stood beside an FPR interval [0.007, 0.064] that
    excludes 0 (p 0.041): only the Holm-adjusted p (0.083) made it not significant, and the sentence said not."""
    from copy import deepcopy

    from driftline.readouts.ab_verdict import verdict

    d = deepcopy(doc)
    d["srm"]["mismatch"] = False
    fpr = d["comparisons"][0]["metrics"]["fpr"]
    fpr.update(diff=0.035, low=0.007, high=0.064, p_value=0.041, p_holm=0.083, seq_excludes_zero=False)
    v = verdict(d)
    assert ("B − A FPR = +0.035 [0.007, 0.064]: the unadjusted interval excludes 0 (p = 0.041), but the difference is "
            "not significant after Holm correction for 4 comparisons (recall, FPR, precision and alert rate; "
            "adjusted p = 0.083).") in v, v
    assert "No significant difference in FPR" not in v


def test_shadow_fpr_names_the_mcnemar_family_of_two() -> None:
    from driftline.readouts.ab_verdict import _others

    e = {"diff": 0.035, "low": 0.007, "high": 0.064, "p_value": 0.2, "p_holm": 0.6, "counts": {}}
    quiet = {"diff": 0.001, "low": -0.01, "high": 0.012, "p_value": 0.8, "p_holm": 1.0, "counts": {}}
    comp = {"treatment": "B", "control": "A", "cost_per_1000": None,
            "metrics": {"recall": quiet, "fpr": e, "precision": quiet, "alert_rate": quiet},
            "paired": {"recall": {"p_value": 0.3, "p_holm": 0.3}, "fpr": {"p_value": 0.041, "p_holm": 0.083}}}
    out = _others({"alpha": 0.05}, comp)
    assert out[0] == ("B − A FPR = +0.035 [0.007, 0.064]: the unadjusted interval excludes 0 (exact McNemar p = 0.041), "
                      "but the difference is not significant after Holm correction for 2 comparisons (recall and "
                      "FPR; adjusted p = 0.083).")
    assert out[1] == "No significant difference in precision or alert rate."
    comp["paired"]["fpr"].update(p_value=0.07, p_holm=0.14)  # the test itself disagrees with the interval
    assert _others({"alpha": 0.05}, comp)[0] == ("B − A FPR = +0.035 [0.007, 0.064]: the unadjusted interval "
                                                 "excludes 0 but the exact McNemar test does not (p = 0.070).")
