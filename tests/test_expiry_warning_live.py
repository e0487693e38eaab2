"""`driftline run` warns when its maintenance expires predictions it stored since the pass before (new-user tryout:
an old event stored with newer ones was accepted, then expired at once, and nothing said so); once per run of such
passes, not every 30 s; older predictions expiring as time moves on are logged at info as before."""

from __future__ import annotations

import logging
import math
from types import SimpleNamespace

from kafka import TopicPartition

from driftline.config import from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.ingest.stored_now import KeyLog
from driftline.kafka.upkeep import Upkeep, maintenance_streak
from driftline.storage.store import Store

from helpers import pred

DAY = 86400.0
T0 = 1_790_000_000.0


class _Member(Upkeep):
    """The part of a LiveConsumer its maintenance reads."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline, self.expected, self.maintain_every_s = pipeline, {TopicPartition("predictions", 0): 0}, 30.0
        self.expiring, self.member = False, "m"  # its key among the maintenance ceilings (storage/ceilings.py)
        self.consumer, self.settings, self.orphans = None, SimpleNamespace(topics=("predictions",)), []  # no
        # metadata known: only its own partition is maintained
        self.maintain_failing = maintenance_streak(lambda: 0.0)
        pipeline.stored_now = KeyLog()

    def _maintenance_ceiling(self) -> float:
        return math.inf  # no partition with records left (alignment.py)


def _store(pipe: Pipeline, *raws: bytes) -> None:
    pipe.process_batch([RawRecord("predictions", 0, i, r, "prediction") for i, r in enumerate(raws)])


def _warnings(caplog) -> list[str]:
    out = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    caplog.clear()
    return out


def test_maintenance_warns_once_per_run_of_passes_expiring_what_was_just_stored(tmp_path, caplog) -> None:
    store = Store(f"sqlite:///{tmp_path / 'live.db'}", clock=lambda: T0 + 200 * DAY)
    store.migrate()
    pipe = Pipeline(from_dict({}), store, clock=lambda: T0 + 200 * DAY)
    member = _Member(pipe)
    caplog.set_level(logging.INFO, "driftline.kafka.consumer")
    _store(pipe, pred("new", 0.7, T0), pred("old", 0.5, T0 - 200 * DAY))  # one batch: both accepted
    member.maintain()
    (warning,) = _warnings(caplog)
    assert warning.startswith("maintenance expired 1 prediction stored since its previous pass")
    assert "labels.horizon (90d)" in warning and "cannot join" in warning
    _store(pipe, pred("new2", 0.7, T0 + 1), pred("old2", 0.5, T0 - 100 * DAY + 1))
    member.maintain()  # the same again, at the next pass: no second warning (info only)
    assert _warnings(caplog) == []
    _store(pipe, pred("mid", 0.4, T0 - 50 * DAY))
    member.maintain()  # a pass that expires none of what was just stored ends the run of them
    _store(pipe, pred("late", 0.6, T0 + 100 * DAY))  # moves time on: "mid" expires, but it was stored passes ago
    member.maintain()
    assert _warnings(caplog) == []
    _store(pipe, pred("old3", 0.5, T0 + 20 * DAY), pred("late2", 0.6, T0 + 150 * DAY))  # a new run of them
    member.maintain()
    assert len(_warnings(caplog)) == 1
    store.close()
