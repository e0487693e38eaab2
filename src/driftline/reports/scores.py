"""The report's score distribution: this week and the reference period on ten equal-width score bins
(0.0–0.1 … 0.9–1.0), summed exactly from the fine score grid, with the reference's non-numeric counts."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.grids import N_SCORE_BINS, score_edge_index

EDGES = tuple(round(i / 10, 1) for i in range(11))
"""Edges of the report's score bins (exact edges of the fine score grid)."""


def binned(fine_hist: np.ndarray) -> list[int]:
    """Counts of a fine score histogram on the EDGES bins (the last bin includes a score of exactly 1)."""
    cuts = [score_edge_index(e) for e in EDGES]
    cuts[-1] = N_SCORE_BINS
    h = np.asarray(fine_hist, dtype=np.int64)
    return [int(h[cuts[i]:cuts[i + 1]].sum()) for i in range(len(EDGES) - 1)]


def fine_from_sample(idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """A dense fine score histogram from sparse (bin index, count) arrays (a stored reference's score sample)."""
    h = np.zeros(N_SCORE_BINS, dtype=np.int64)
    np.add.at(h, np.asarray(idx, dtype=np.int64), np.asarray(counts, dtype=np.int64))
    return h


def _shares(counts: list[int]) -> list[float | None]:
    total = sum(counts)
    return [c / total if total else None for c in counts]


def score_distribution(current: np.ndarray, reference: dict[str, Any] | None,
                       drift_score: dict[str, Any] | None, reason: str | None) -> dict[str, Any]:
    """This week's and the reference's counts and shares per bin. `reference` is {"hist": fine histogram,
    "other": n, "missing": n, "id": reference id} or None; `drift_score` the drift document's score entry
    (PSI, JS, noise floor, verdict, on the reference's own frozen bins)."""
    cur = binned(current)
    bins = [{"low": EDGES[i], "high": EDGES[i + 1], "current": cur[i]} for i in range(len(cur))]
    doc: dict[str, Any] = {"edges": list(EDGES), "bins": bins, "current_n": sum(cur),
                           "deciles": {"edges": list(EDGES), "counts": cur}}
    for b, s in zip(bins, _shares(cur)):
        b["current_share"] = s
    if reference is None:
        doc.update(reference=None, reference_vs_current=None, reason=reason or "no reference profile")
        return doc
    ref = binned(reference["hist"])
    for b, c, s in zip(bins, ref, _shares(ref)):
        b.update(reference=c, reference_share=s)
    doc["reference"] = {"id": reference.get("id"), "n": sum(ref), "other": int(reference.get("other", 0)),
                        "missing": int(reference.get("missing", 0))}
    doc["reference_vs_current"] = None if not drift_score else {
        k: drift_score.get(k) for k in ("psi", "js", "noise_floor", "drifted")}
    if not drift_score:
        doc["reason"] = reason or "no score drift in the drift document"
    return doc
