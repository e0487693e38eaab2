"""Per-record isolation of the engine: no single record can fail a batch (and so stop a file or a partition).

The engine mutates the join view it applies events to, so a record that raises half-way cannot simply be
skipped: the batch is applied again, from a freshly loaded view, without it. A failure in `finish()` (the
vectorised step over the whole batch) is traced to the records that fail alone. Each culprit becomes an
`internal_error` dead letter naming the exception class; the batch's other records are stored as usual.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ..core.batch import EventColumns, apply_batch
from ..core.engine import Engine, EngineResult, EngineSettings, JoinView
from ..core.events import RAW_LIMIT, Decoded, DeadLetter

log = logging.getLogger(__name__)

Accepted = tuple[Decoded, int]
"""A decoded event and its shard."""
Tick = Callable[[str, int, int], None]
"""Told (stage, records done, records in the batch) as a batch goes, for a progress display."""
TICK = 2048
"""Records between two ticks: a call per 2,048 records costs nothing measurable."""


def apply_isolating(settings: EngineSettings, ok: Sequence[Accepted], load_view: Callable[[], JoinView],
                    origin: Callable[[int], tuple[str, int, int, bytes]] | None = None, tick: Tick | None = None,
                    columns: EventColumns | None = None) -> tuple[EngineResult, list[DeadLetter]]:
    """Apply the accepted events and finish; returns (result, internal_error letters of the records set aside).
    The batch path runs first; if anything in it raises, the batch is applied again per event from a fresh view.

    `load_view` loads the join state of the batch again (called once more per retry: nothing is written until the
    caller commits). `origin(i)` gives (source, partition, offset, raw) of the i-th accepted record for its dead
    letter. A failure no single record explains is raised: it is not a record's fault. `tick`: see Tick. `columns`:
    the events of `ok`, their ids and prediction flags, when the caller listed them (core.batch.event_columns)."""
    if tick is not None:
        tick("applying", 0, len(ok))
    view = load_view()  # outside the try: a database error is no record's fault (its connection may be gone)
    try:  # the batch path (core/batch.py): the same result as the loop below when no record fails
        engine = Engine(settings, view)
        apply_batch(engine, ok, columns)
        return engine.finish(), []
    except Exception:  # noqa: BLE001 - a failing record: the per-event loop finds it
        log.debug("batch path failed; isolating per record", exc_info=True)
    todo = list(range(len(ok)))
    letters: list[DeadLetter] = []
    while True:
        engine = Engine(settings, load_view())
        position = -1
        try:
            for position, i in enumerate(todo):
                if tick is not None and position % TICK == 0:
                    tick("applying", position, len(todo))
                d, shard = ok[i]
                engine.apply(d, shard)
            position = -1
            return engine.finish(), letters
        except Exception as err:  # noqa: BLE001 - isolate it to the record(s) that cause it
            if position >= 0:
                culprits = {todo[position]: err}
            else:
                culprits = _failing_alone(settings, ok, todo)
                if not culprits:
                    raise
        for i, err in culprits.items():
            letters.append(_letter(ok[i][0], i, err, origin))
        todo = [i for i in todo if i not in culprits]


def _failing_alone(settings: EngineSettings, ok: Sequence[Accepted], todo: list[int]) -> dict[int, Exception]:
    """The records whose apply + finish raise on their own (over an empty join view), with their exceptions."""
    failing: dict[int, Exception] = {}
    for i in todo:
        d, shard = ok[i]
        try:
            engine = Engine(settings, JoinView())
            engine.apply(d, shard)
            engine.finish()
        except Exception as err:  # noqa: BLE001 - this is what we are looking for
            failing[i] = err
    return failing


def _letter(d: Decoded, i: int, err: Exception,
            origin: Callable[[int], tuple[str, int, int, bytes]] | None) -> DeadLetter:
    source, partition, offset, raw = origin(i) if origin else ("unknown", 0, -1, b"")
    detail = f"engine: {type(err).__name__}: {err}"[:500]
    log.error("dead letter internal_error: %s[%d]@%d (prediction_id %r): %s", source, partition, offset,
              d.event.prediction_id, detail, exc_info=err)
    return DeadLetter("internal_error", detail, source, partition, offset, bytes(raw[:RAW_LIMIT]))
