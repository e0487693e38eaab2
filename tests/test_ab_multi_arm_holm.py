"""Several treatments against one control: one Holm family over every treatment's headline metrics."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
from statsmodels.stats.multitest import multipletests

from driftline.analysis.abstats import ArmCounts, compare_arms
from driftline.config import from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.readouts.ab import ABQuery, ab_document
from driftline.storage.store import Store

sys.path.insert(0, str(Path(__file__).parent))
from helpers import outcome, pred  # noqa: E402

T0 = 1_699_920_000.0  # a midnight UTC
HEADLINE = ("recall", "fpr", "precision", "alert_rate")


def _doc(tmp_path: Path, arms: dict[str, float], seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    raws = []
    for i in range(4000):
        arm = list(arms)[i % len(arms)]
        y = int(rng.random() < 0.1)
        score = float(np.clip(rng.normal(0.6 if y else 0.35, 0.2), 0.0, 1.0))
        raws += [pred(f"p{i}", score, T0 + i * 60, variant=arm), outcome(f"p{i}", y, T0 + i * 60 + 86400)]
    config = from_dict({"ab": {"design": "split", "control": "A", "arms": arms}})
    store = Store(f"sqlite:///{tmp_path / 'multi.db'}")
    store.migrate()
    Pipeline(config, store, clock=lambda: T0 + 30 * 86400).process_batch(
        [RawRecord("test", 0, j, r) for j, r in enumerate(raws)])
    try:
        return ab_document(store, config, ABQuery("fraud", 7 * 86400.0))
    finally:
        store.close()


def test_holm_spans_every_treatment(tmp_path: Path) -> None:
    """p Holm of B, C and D against A equals statsmodels' Holm over all 12 p-values (it was Holm over each
    treatment's 4 alone, so 3 A/A treatments showed some Holm p < 0.05 in 11.6 % of experiments, not ≤ 5 %)."""
    doc = _doc(tmp_path, {"A": 0.25, "B": 0.25, "C": 0.25, "D": 0.25}, seed=4)
    cells = [c["metrics"][m] for c in doc["comparisons"] for m in HEADLINE]
    assert len(cells) == 12
    expected = multipletests([c["p_value"] for c in cells], method="holm")[1]
    assert [c["p_holm"] for c in cells] == list(expected)
    assert all(c["holm_treatments"] == ["B", "C", "D"] for c in doc["comparisons"])


def test_one_treatment_keeps_its_family_of_four(tmp_path: Path) -> None:
    doc = _doc(tmp_path, {"A": 0.5, "B": 0.5}, seed=5)
    (comp,) = doc["comparisons"]
    expected = multipletests([comp["metrics"][m]["p_value"] for m in HEADLINE], method="holm")[1]
    assert [comp["metrics"][m]["p_holm"] for m in HEADLINE] == list(expected)


def test_family_wise_error_of_three_aa_treatments_is_at_most_alpha() -> None:
    """Reference simulation with the readout's own adjustment: 3 A/A treatments, any p_holm < 0.05."""
    from driftline.readouts.ab import holm_across_treatments
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(600):
        arms = []
        for _ in range(4):
            n, pos = 5000, int(rng.binomial(5000, 0.02))
            tp, fp = int(rng.binomial(pos, 0.7)), int(rng.binomial(n - pos, 0.05))
            arms.append(ArmCounts(tp, fp, pos - tp, n - pos - fp))
        comps = [{"treatment": t, "control": "A", "metrics": {k: v.to_json() for k, v in
                                                             compare_arms(arms[i], arms[0]).metrics.items()}}
                 for i, t in enumerate("BCD", start=1)]
        holm_across_treatments(comps)
        hits += any(c["metrics"][m]["p_holm"] < 0.05 for c in comps for m in HEADLINE
                    if c["metrics"][m]["p_holm"] is not None)
    assert hits / 600 <= 0.05 + 3 * (0.05 * 0.95 / 600) ** 0.5
