"""Fine score histograms (rows of counts) as compact JSON: populated indices and their counts."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..core.grids import N_SCORE_BINS


def sparse_rows(h: np.ndarray) -> list[dict[str, list[int]]]:
    """Rows of a fine histogram as populated indices and counts (compact JSON)."""
    return [{"idx": np.flatnonzero(r).tolist(), "counts": r[r > 0].astype(np.int64).tolist()} for r in h]


def dense_rows(rows: list[Mapping[str, list[int]]] | None) -> np.ndarray | None:
    """Inverse of sparse_rows on the fine score grid."""
    if rows is None:
        return None
    h = np.zeros((len(rows), N_SCORE_BINS), np.int64)
    for i, r in enumerate(rows):
        h[i, np.asarray(r["idx"], np.int64)] = np.asarray(r["counts"], np.int64)
    return h
