"""Whole-model summaries read from every stored bucket of a model, decoding only counts and label delays: which
models are stored (for an unknown or missing --model) and a model's label-delay histogram (label maturity)."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select

from ..core.labels import by_name
from ..core.encoded import delay_sum, encoded_counts
from . import schema as t
from .store import Store


def model_summaries(store: Store) -> list[tuple[str, int, int]]:
    """Per stored model: (name, predictions, newest bucket start), by name."""
    b = t.buckets.c
    out: dict[str, list[int]] = {}
    with store.read() as conn:
        for model, start, data in conn.execute(select(b.model, b.bucket_start, b.data)):  # by position: a Row's
            n = encoded_counts(data)[0]  # attribute lookup costs more than the counts' decode
            acc = out.setdefault(model, [0, int(start)])
            acc[0] += n
            acc[1] = max(acc[1], int(start))
    return [(m, out[m][0], out[m][1]) for m in sorted(out, key=by_name)]


def delay_histogram(store: Store, model: str | None) -> tuple[np.ndarray, int | None]:
    """The model's label-delay histogram over its whole stored history (grids.DELAY_EDGES bins) and its earliest
    bucket start (None when nothing is stored)."""
    b = t.buckets.c
    q = select(b.bucket_start, b.data)
    if model is not None:
        q = q.where(b.model == model)
    indexes: list[bytes] = []
    counts: list[bytes] = []
    first: int | None = None
    with store.read() as conn:
        for start, data in conn.execute(q):
            _, di, dc = encoded_counts(data)
            indexes.append(di)
            counts.append(dc)
            first = int(start) if first is None else min(first, int(start))
    return delay_sum(indexes, counts), first


def model_series(store: Store, model: str) -> list[tuple[str, str]]:
    """The (variant, model version) pairs stored for a model, sorted: what --variant and --model-version may name."""
    b = t.buckets.c
    q = select(b.variant, b.model_version).where(b.model == model).distinct()
    with store.read() as conn:
        return sorted((r.variant, r.model_version) for r in conn.execute(q))
