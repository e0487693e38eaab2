"""A batch's feature values as the engine's feature histograms transposed them, handed on to the sample recording.

`feature_hists` turns the counted predictions' feature dicts into a column per name whenever every dict holds the
same names (the common batch); the sample recording (ingest/sampling.py) needs the same values again, a column
per name, for the predictions it keeps. It takes them from here (each row found by its event's sequence number)
instead of transposing the dicts a second time. Pure: no IO.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True, eq=False)
class FeatureColumns:
    """The feature values of a batch's counted predictions: `cols[i][r]` is row r's value of `names[i]` (every
    row holds every name), `seq[r]` the sequence number of the event row r came from (event index · SEQ)."""

    seq: np.ndarray
    names: tuple[str, ...]
    cols: list[list[Any]]

    def rows_at(self, seqs: np.ndarray) -> list[list[Any]] | None:
        """Each column's values of the rows of the events numbered `seqs`, in that order; None when some event has
        no row here (a duplicate prediction is never counted) or the rows are not one per sequence number."""
        seq = self.seq
        if not len(seqs):
            return [[] for _ in self.cols]
        if not len(seq) or (len(seq) > 1 and not bool((seq[1:] > seq[:-1]).all())):
            return None
        pos = np.searchsorted(seq, seqs)
        if int(pos.max()) >= len(seq) or not bool((seq[pos] == seqs).all()):
            return None
        at = pos.tolist()
        if len(at) == 1:
            return [[col[at[0]]] for col in self.cols]
        take = itemgetter(*at)
        return [list(take(col)) for col in self.cols]


__all__ = ["FeatureColumns"]
