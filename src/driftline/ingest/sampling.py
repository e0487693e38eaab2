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
from ..core.sample import MAX_TAU, FeatureSample, id_hash, sample_of, sample_row, smallest_distinct
from ..storage.samples import SampleKey, merge_into
from .labels import Positioned


def batch_samples(settings: EngineSettings, events: Sequence[Decoded], k: int) -> dict[SampleKey, FeatureSample]:
    """Per bucket, the sample of the given events' predictions (outcomes are skipped). Feature rows are built
    only for the candidates: the predictions holding one of a bucket's k smallest hashes."""
    offered: dict[SampleKey, list[tuple[int, int]]] = defaultdict(list)
    bs = settings.bucket_s
    for i, d in enumerate(events):
        ev = d.event
        if not isinstance(ev, Prediction):
            continue
        key = (ev.model, ev.model_version or DEFAULT_VERSION, ev.variant or DEFAULT_VARIANT, int(d.ts // bs) * bs)
        offered[key].append((id_hash(ev.prediction_id), i))
    out: dict[SampleKey, FeatureSample] = {}
    for key, items in offered.items():
        items.sort()
        cand = smallest_distinct(items, k)
        tau = cand.items[-1][0] if cand.cut else MAX_TAU
        out[key] = sample_of(((h, sample_row(events[i].event.features,  # type: ignore[union-attr]
                                             settings.declared_features, settings.max_features))
                              for h, i in cand.items), k, tau)
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
