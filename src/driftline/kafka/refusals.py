"""A batch the database refuses (e.g. an id longer than its column): stored record by record so one bad message
becomes a `store_rejected` dead letter and cannot stop the stream. A mixin of LiveConsumer."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafka import TopicPartition

from ..ingest.pipeline import Pipeline, RawRecord
from ..storage.errors import StalePositions, StoreUnavailable
from .assignment import source_of
from .batches import Batch, record_key
from .dlt import DeadLetterCopies
from .settings import KafkaSettings

log = logging.getLogger("driftline.kafka.consumer")


class Refusals:
    """Record-by-record storing of a refused batch (positions advance with each record or dead letter)."""

    pipeline: Pipeline
    settings: KafkaSettings
    expected: dict[TopicPartition, int]
    consumed: Any
    held: Any
    dlt: DeadLetterCopies | None

    # provided by LiveConsumer
    _hold: Callable[[Batch, StoreUnavailable], None]
    _reposition: Callable[[Batch], None]
    _db_written: Callable[[], None]
    _release_held: Callable[[], None]
    _commit: Callable[[dict[TopicPartition, int]], None]
    _count_keys: Callable[[Any], None]

    def _isolate(self, batch: Batch) -> None:
        """Store a refused batch record by record; a record the database still refuses becomes a
        `store_rejected` dead letter (its position advances with it), so one bad message cannot stop the stream."""
        remaining = {tp: list(recs) for tp, recs in batch.items()}
        for tp in list(remaining):
            while remaining[tp]:
                rec = remaining[tp][0]
                try:
                    self._store_single(tp, rec)
                except StoreUnavailable as err:
                    self._hold({k: v for k, v in remaining.items() if v}, err)
                    return
                except StalePositions as err:
                    log.warning("%s: re-reading stored positions", err)
                    self._reposition(batch)
                    return
                remaining[tp].pop(0)
                self.expected[tp] = rec.offset + 1
                self.consumed.labels(topic=tp.topic).inc()
        self._db_written()
        if self.held is not None:
            self._release_held()
        self._commit({tp: self.expected[tp] for tp in batch})

    def _store_single(self, tp: TopicPartition, rec: Any) -> None:
        key = (source_of(tp.topic), tp.partition)
        raw = RawRecord(key[0], tp.partition, rec.offset, rec.value if rec.value is not None else b"",
                        self.settings.kind_of(tp.topic), record_key(rec))
        start = self.expected[tp]
        result, letter = self.pipeline.store_or_reject(raw, {key: start})
        self._count_keys(result.key_problems)
        if letter is not None:
            log.warning("dead letter store_rejected: %s[%d]@%d: %s", tp.topic, tp.partition, rec.offset, letter.detail)
        if self.dlt is not None:
            letters = [letter] if letter is not None else result.letters
            self.dlt.after_batch(letters, {}, {key: (start, rec.offset + 1)})
