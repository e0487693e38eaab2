"""The ingestion hook of multivariate drift: each batch's accepted predictions offered to their bucket's sample.

Called once per batch from Pipeline.process_batch, inside its write transaction, after the engine: the
predictions set aside by the engine (internal_error) are left out; duplicates need no care, since a repeated id
has the same hash and a sample keeps one row per hash.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import Connection

from ..core.engine import DEFAULT_VARIANT, DEFAULT_VERSION, EngineSettings
from ..core.events import DeadLetter, Decoded, Prediction
from ..core.sample import MAX_TAU, FeatureSample, id_hashes, sample_rows, sample_sorted, smallest_distinct
from ..storage.samples import SampleKey, merge_into
from .labels import Positioned


def batch_samples(settings: EngineSettings, events: Sequence[Decoded], k: int) -> dict[SampleKey, FeatureSample]:
    """Per bucket, the sample of the given events' predictions (outcomes are skipped). Feature rows are built
    only for the candidates: the predictions holding one of a bucket's k smallest hashes (all in one go)."""
    preds = [d for d in events if isinstance(d.event, Prediction)]
    hashes = id_hashes([d.event.prediction_id for d in preds])  # type: ignore[union-attr]
    offered: dict[SampleKey, list[tuple[int, int]]] = defaultdict(list)
    bs = settings.bucket_s
    for i, (d, h) in enumerate(zip(preds, hashes)):
        ev: Prediction = d.event  # type: ignore[assignment]
        offered[(ev.model, ev.model_version or DEFAULT_VERSION, ev.variant or DEFAULT_VARIANT,
                 int(d.ts // bs) * bs)].append((h, i))
    chosen: list[tuple[SampleKey, list[tuple[int, int]], int]] = []
    for key, items in offered.items():
        items.sort()
        cand = smallest_distinct(items, k)
        chosen.append((key, cand.items, cand.items[-1][0] if cand.cut else MAX_TAU))  # type: ignore[arg-type]
    rows = sample_rows([preds[i].event.features for _, items, _ in chosen for _, i in items],  # type: ignore[union-attr]
                       settings.declared_features, settings.max_features)
    out: dict[SampleKey, FeatureSample] = {}
    at = 0
    for key, items, tau in chosen:
        n = len(items)
        out[key] = sample_sorted([h for h, _ in items], rows[at:at + n], k, tau)
        at += n
    return out


def record_samples(conn: Connection, settings: EngineSettings, ok: Sequence[tuple[Decoded, int]],
                   positions: Sequence[Positioned], failed: Sequence[DeadLetter], k: int) -> None:
    """Merge the batch's samples into the stored bucket samples (in the batch's write transaction); `positions`
    are the accepted events' records, `failed` the engine's internal_error letters (left out)."""
    out = {(f.source, f.partition, f.offset) for f in failed}
    events = [d for (d, _), r in zip(ok, positions) if not out or (r.source, r.partition, r.offset) not in out]
    deltas = batch_samples(settings, events, k)
    if deltas:
        merge_into(conn, deltas, k, settings.bucket_s)
