"""Shadow mode's part of the A/B readout (readouts.ab): the prediction pairs scored by both arms, joined by
prediction_id in the `predictions` join table, their exact McNemar tests and paired bootstrap, and the note that
the other intervals treat the arms as independent samples.

Under `labels.policy: implicit_negative_after`, over a window reaching into the maturity period, the paired FPR test
and the paired precision and cost intervals (and the check whether labels follow the control's flags) read the pairs
made before the matured part's boundary (matured_part), as each arm's FPR, precision and cost do; the paired recall
test and interval read every joined pair."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.abstats import compare_proportions, holm
from ..analysis.costs import Costs
from ..analysis.paired import PairedTable, paired_bootstrap, paired_tests
from ..analysis.rates import rate
from ..core.events import iso
from ..core.stats import NEG, POS, UNL
from ..storage.store import Store
from .windows import Window

ALPHA = 0.05
"""The readout's two-sided level (readouts.ab re-exports it)."""


# --- shadow pairs from the join table ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ShadowPairs:
    """Paired table of ids scored by both variants (control's ts in the window) and the unpaired rows; under the
    implicit-negative policy, over a window reaching into the maturity period, the pairs made before `before`."""

    table: PairedTable
    rows_control: int
    rows_treatment: int
    matured: PairedTable | None = None
    """The pairs of the window's matured part (control's ts before `before`); None: every pair has its negatives."""
    before: float | None = None

    @property
    def negative_reading(self) -> PairedTable:
        """The table the paired FPR test and precision and cost intervals read: the matured pairs' labels."""
        return self.table if self.matured is None else self.table.negative_reading(self.matured)

    def to_json(self) -> dict[str, object]:
        n = self.table.n
        mat = None if self.matured is None or self.before is None else {
            "before": iso(self.before), "pairs": self.matured.n, "young_pairs": n - self.matured.n,
            "reads": list(MATURED_PAIRED), "table": self.matured.to_json()}
        return {"pairs": n, "rows": {"control": self.rows_control, "treatment": self.rows_treatment},
                "unpaired": {"control": self.rows_control - n, "treatment": max(0, self.rows_treatment - n)},
                "table": self.table.to_json(), "matured": mat}


MATURED_PAIRED = ("fpr", "bootstrap.precision", "bootstrap.cost_per_1000", "labels_follow_control")
"""The paired figures read over the matured pairs (JSON `paired.matured.reads`)."""


def _cells(store: Store, model: str | None, start: float, end: float, control: str,
           treatment: str) -> tuple[PairedTable, dict[str, int]]:
    with store.read() as conn:
        cells, per_variant = store.join.shadow_cells(conn, model, start, end, control, treatment)
    counts = np.zeros((3, 2, 2), dtype=np.int64)
    for label, fc, ft, n in cells:
        state = POS if label == 1 else NEG if label == 0 else UNL
        counts[state, int(fc), int(ft)] += n
    return PairedTable(counts), per_variant


def shadow_pairs(store: Store, model: str | None, window: Window, control: str, treatment: str,
                 before: float | None = None) -> ShadowPairs:
    """Join control and treatment predictions by (prediction_id, model) in the join table and count
    cells [label state, flagged by control, flagged by treatment] in the database (GROUP BY); with `before` (the
    matured part's boundary of a window reaching into the maturity period) the pairs made before it too."""
    table, per_variant = _cells(store, model, window.start, window.end, control, treatment)
    matured = None
    if before is not None:
        end = min(max(before, window.start), window.end)
        matured = (_cells(store, model, window.start, end, control, treatment)[0] if end > window.start
                   else PairedTable(np.zeros((3, 2, 2), dtype=np.int64)))
    return ShadowPairs(table, per_variant.get(control, 0), per_variant.get(treatment, 0), matured, before)


def independent_intervals(comp: dict[str, Any]) -> dict[str, Any]:
    """Shadow mode: which comparison intervals treat the arms as independent samples although both arms score the
    same ids, and that this is conservative. Measured (benchmarks/shadow_pairing_coverage.py): with decisions
    agreeing on most ids, the independent 95 % intervals held the truth in every simulated window and were
    1.6–2.8 × as wide as paired ones (paired bootstrap / paired Wald: 0.91–0.96)."""
    metrics = ["fpr", "precision", "alert_rate"]
    cost = comp.get("cost_per_1000")
    if cost is not None and cost.get("method") != "paired_bootstrap":
        metrics.append("cost_per_1000")
    names = {"fpr": "FPR", "precision": "precision", "alert_rate": "alert-rate", "cost_per_1000": "cost"}
    listed = ", ".join(names[m] for m in metrics[:-1]) + " and " + names[metrics[-1]]
    text = (f"In shadow mode both arms score the same ids, but the {listed} intervals treat the arms as "
            "independent samples: conservative, as the arms' decisions agree on most ids (simulated shadow windows: "
            "these 95 % intervals held the truth every time and were 1.6–2.8 times as wide as paired ones), so they "
            "can miss a real difference; the paired figures are the shadow-pairs table's exact McNemar tests and "
            "paired bootstrap intervals.")
    return {"metrics": metrics, "conservative": True, "text": text}


def paired_readout(pairs: ShadowPairs, costs: Costs, seed: int, n_boot: int) -> dict[str, Any]:
    """Shadow mode: exact sign tests (McNemar) on discordant pairs, Holm over the two, paired bootstrap
    of recall/precision/cost differences (seeded), and whether labels follow the control's flags; FPR's test,
    the precision and cost intervals and the label-coverage check over the matured pairs when only they have their
    negatives."""
    tab, neg = pairs.table, pairs.negative_reading
    tests = dataclasses.replace(paired_tests(tab), fpr=paired_tests(neg).fpr)
    boot = paired_bootstrap(tab, costs, n_boot=n_boot, seed=seed, alpha=ALPHA)
    if pairs.matured is not None:
        nb = paired_bootstrap(neg, costs, n_boot=n_boot, seed=seed, alpha=ALPHA)
        boot = dataclasses.replace(boot, precision=nb.precision, cost_per_1000=nb.cost_per_1000)
    p_holm = holm([tests.recall.p_value, tests.fpr.p_value])
    doc: dict[str, Any] = {**pairs.to_json(), **tests.to_json(), "bootstrap": boot.to_json()}
    doc["recall"] = {**doc["recall"], "p_holm": p_holm[0]}
    doc["fpr"] = {**doc["fpr"], "p_holm": p_holm[1]}
    # coverage reads the labelled negatives too: over the matured pairs when only they have theirs (else the young
    # pairs' early positives, mostly flagged, read as labels following the control's flags)
    cnt = tab.counts if pairs.matured is None else pairs.matured.counts
    labelled = [NEG, POS]
    lab_f, all_f = int(cnt[labelled, 1, :].sum()), int(cnt[:, 1, :].sum())
    lab_u, all_u = int(cnt[labelled, 0, :].sum()), int(cnt[:, 0, :].sum())
    follows = compare_proportions(lab_f, all_f, lab_u, all_u, metric="coverage_flagged_vs_unflagged_by_control")
    cf, cu = rate(lab_f, all_f), rate(lab_u, all_u)
    biased = (follows.p_value is not None and follows.p_value < 0.01 and cf.value is not None
              and cu.value is not None and cf.value > 1.1 * cu.value)
    doc["labels_follow_control"] = {"coverage_flagged": cf.to_json(), "coverage_unflagged": cu.to_json(),
                                    "p_value": follows.p_value, "warning": biased,
                                    "pairs": "all" if pairs.matured is None else "matured"}
    return doc
