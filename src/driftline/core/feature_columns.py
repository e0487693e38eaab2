"""A batch's feature values as the engine's feature histograms transposed them, handed on to the sample recording.

`feature_hists` turns the counted predictions' feature dicts into a column per name whenever every dict holds the
same names (the common batch); the sample recording (ingest/sampling.py) needs the same values again, a column
per name, for the predictions it keeps, and groups the predictions by bucket as the engine did. It takes both
from here (each row found by its event's sequence number) instead of transposing the dicts and grouping the
events a second time. Pure: no IO.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True, eq=False)
class FeatureColumns:
    """The feature values of a batch's counted predictions: `cols[i][r]` is row r's value of `names[i]` (every
    row holds every name), `seq[r]` the sequence number of the event row r came from (event index · SEQ),
    `buckets[r]` its engine bucket index, whose key (model, version, variant, start, shard) is `keys[b]`, with
    buckets `bucket_s` seconds wide; `events`, `pids` and `is_pred`: every event of the batch (Prediction or
    Outcome), its prediction id and whether it is a prediction, as the batch path listed them."""

    seq: np.ndarray
    buckets: np.ndarray
    names: tuple[str, ...]
    cols: list[list[Any]]
    keys: list[tuple[Any, ...]]
    bucket_s: int
    events: list[Any]
    pids: list[str]
    is_pred: list[bool]

    def positions(self, seqs: np.ndarray) -> np.ndarray | None:
        """The rows of the events numbered `seqs`, in that order; None when some event has no row here (a
        duplicate prediction is never counted) or the rows are not one per sequence number."""
        seq = self.seq
        if not len(seq) or (len(seq) > 1 and not bool((seq[1:] > seq[:-1]).all())):
            return None
        pos = np.searchsorted(seq, seqs)
        if len(pos) and (int(pos.max()) >= len(seq) or not bool((seq[pos] == seqs).all())):
            return None
        return pos

    def rows_at(self, seqs: np.ndarray) -> list[list[Any]] | None:
        """Each column's values of the rows of the events numbered `seqs`, in that order (None: see positions)."""
        if not len(seqs):
            return [[] for _ in self.cols]
        pos = self.positions(seqs)
        return None if pos is None else self.rows_of(pos)

    def rows_of(self, pos: np.ndarray) -> list[list[Any]]:
        """Each column's values of rows `pos` (from positions), in that order."""
        if not len(pos):
            return [[] for _ in self.cols]
        at = pos.tolist()
        if len(at) == 1:
            return [[col[at[0]]] for col in self.cols]
        take = itemgetter(*at)
        return [list(take(col)) for col in self.cols]

    def series_buckets(self, seqs: np.ndarray) -> tuple[list[tuple[Any, ...]], np.ndarray] | None:
        """(distinct (model, version, variant, bucket start) keys, each event's index into them) of the events
        numbered `seqs`: their engine buckets without the shard (None: see positions)."""
        pos = self.positions(seqs)
        return None if pos is None else self.series_of(pos)

    def series_of(self, pos: np.ndarray) -> tuple[list[tuple[Any, ...]], np.ndarray]:
        """series_buckets of rows `pos` (from positions)."""
        index: dict[tuple[Any, ...], int] = {}
        code = np.fromiter([index.setdefault(key[:4], len(index)) for key in self.keys], dtype=np.int64,
                           count=len(self.keys))
        return list(index), code[self.buckets[pos]]


__all__ = ["FeatureColumns"]
