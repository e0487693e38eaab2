"""Event-time alignment without a broker (kafka/alignment.py): the cut of a batch, pausing and resuming, and the
maintenance watermark capped at the slowest partition; the real broker is in test_kafka_backlog_alignment.py."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from kafka import TopicPartition

from driftline.config import ConfigError, from_dict
from driftline.core.events import DeadLetter
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.kafka.alignment import IDLE_S, Aligning, Alignment, Cut, cut
from driftline.storage.store import Store
from helpers import decoded, outcome, pred

DAY = 86400.0
T0 = 1_767_225_600.0
NOW = T0 + 100 * DAY


def _batch(*parts: tuple[int, list[float]]) -> tuple[list[RawRecord], list[object]]:
    """Records of partitions (number, event times in offset order), predictions keyed p<partition>-<offset>."""
    records, raws = [], []
    for part, times in parts:
        for off, ts in enumerate(times):
            raw = pred(f"p{part}-{off}", 0.5, ts)
            records.append(RawRecord("kafka:p", part, off, raw, "prediction"))
            raws.append(raw)
    return records, list(decoded(raws))


def test_a_partition_far_ahead_of_another_in_the_batch_is_cut_at_the_bound() -> None:
    records, dec = _batch((0, [T0, T0 + 3 * DAY]), (1, [T0 + i * 0.1 * DAY for i in range(10)]))
    out = Cut()
    keep = cut(records, dec, math.inf, 0.25 * DAY, NOW, out)
    assert keep == [True, False] + [True, True, True] + [False] * 7
    assert out.deferred == {("kafka:p", 0): (1, T0 + 3 * DAY), ("kafka:p", 1): (3, T0 + 0.3 * DAY)}
    assert out.reached == {("kafka:p", 0): T0, ("kafka:p", 1): T0 + 0.2 * DAY}


def test_the_slowest_partition_always_keeps_its_next_event() -> None:
    """A gap longer than the bound in the only partition with data: its first record is stored (no stall)."""
    records, dec = _batch((0, [T0 + 3 * DAY, T0 + 3.1 * DAY]))
    out = Cut()
    assert cut(records, dec, math.inf, 0.25 * DAY, NOW, out) is None
    assert out.reached == {("kafka:p", 0): T0 + 3.1 * DAY}
    out = Cut()  # another partition with data, behind: this one waits for it
    assert cut(records, dec, T0, 0.25 * DAY, NOW, out) == [False, False]
    assert out.deferred == {("kafka:p", 0): (0, T0 + 3 * DAY)} and out.reached == {}


def test_dead_letters_and_events_stamped_ahead_of_the_clock_hold_nothing_back() -> None:
    records, dec = _batch((0, [NOW + 0.5 * DAY]), (1, [NOW - 0.1 * DAY]))
    records.insert(0, RawRecord("kafka:p", 2, 0, b"not json", "prediction"))
    dec.insert(0, DeadLetter("invalid_json", "", "kafka:p", 2, 0, b"not json"))
    out = Cut()
    assert cut(records, dec, math.inf, 0.25 * DAY, NOW, out) is None  # 0.5 d ahead of the clock counts as now
    assert out.reached == {("kafka:p", 0): NOW, ("kafka:p", 1): NOW - 0.1 * DAY}


def test_paused_partitions_resume_when_the_slowest_catches_up() -> None:
    a = Alignment(0.25 * DAY)
    a.reached = {"fast": T0 + 2 * DAY, "slow": T0}
    pause, resume = a.moves({"fast", "slow"}, ["fast", "slow"])
    assert (pause, resume) == ({"fast"}, set())
    a.reached["slow"] = T0 + 1.9 * DAY
    assert a.moves({"fast", "slow"}, ["slow"]) == (set(), {"fast"})
    a.reached["fast"] = T0 + 5 * DAY
    assert a.moves({"slow"}, ["fast", "slow"]) == ({"fast"}, set())  # a partition at its end is paused, too
    a.forget(["slow"])  # the slow one revoked: nothing holds the fast one back
    assert a.moves(set(a.waiting), []) == (set(), {"fast"})
    assert a.floor(set()) == math.inf


def test_maintenance_watermark_is_capped_at_the_slowest_partition(tmp_path: Path) -> None:
    """A prediction 1.4 d older than the newest event stored, horizon 1 d, implicit negatives after 12 h: while a
    partition with its unread outcome is at 0.4 d it is neither expired nor matured (a sequential replay joins the
    outcome; the stored watermark alone expired it)."""
    config = from_dict({"labels": {"horizon": "1d", "policy": "implicit_negative_after",
                                   "implicit_negative_after": "12h"}})
    store = Store(f"sqlite:///{tmp_path / 'm.db'}", clock=lambda: NOW)
    store.migrate()
    pipe = Pipeline(config, store, clock=lambda: NOW)
    pipe.process_batch([RawRecord("kafka:p", 0, 0, pred("a", 0.9, T0), "prediction"),
                        RawRecord("kafka:p", 1, 0, pred("b", 0.9, T0 + 1.4 * DAY), "prediction")])
    assert not pipe.maintain(ceiling=T0 + 0.4 * DAY) and not pipe.maintain(ceiling=-math.inf)
    pipe.process_batch([RawRecord("kafka:o", 0, 0, outcome("a", 1, T0 + 0.45 * DAY), "outcome")])
    counts = pipe.maintain(ceiling=math.inf)
    assert counts.get(("implicit_negatives", ""), 0) == 0 and counts.get(("expired_predictions", ""), 0) == 0
    assert store.counters()[("events", "outcome")] == 1 and not store.counters().get(("dead_letters", "past_horizon"))
    assert Pipeline(config, store, clock=lambda: NOW).maintain()[("expired_predictions", "")] == 0
    store.close()


@pytest.mark.parametrize("value", ["1d", "2d"])
def test_align_within_must_be_shorter_than_the_horizon(value: str) -> None:
    with pytest.raises(ConfigError, match=r"`kafka.align_within`: .* not shorter than labels.horizon \(1d\)"):
        from_dict({"labels": {"horizon": "1d"}, "kafka": {"align_within": value}})
    assert from_dict({"labels": {"horizon": "1d"}}).align_within_s == DAY / 4
    assert from_dict({"labels": {"horizon": "1d"}, "kafka": {"align_within": "2h"}}).align_within_s == 7200


def test_a_partition_whose_position_does_not_move_stops_holding_the_others_back() -> None:
    """Records it cannot deliver (an open transaction under read_committed) must not stall the others for good."""
    a = Alignment(0.25 * DAY)
    assert not a.stuck("p", 10, 0.0) and not a.stuck("p", 10, IDLE_S)
    assert a.stuck("p", 10, IDLE_S + 1)
    assert not a.stuck("p", 11, IDLE_S + 2)  # it moved: it holds the others back again
    a.waiting["q"] = T0  # a partition paused here is waiting, not stuck, however long it waits
    assert not a.stuck("q", 5, 0.0) and not a.stuck("q", 5, 10 * IDLE_S)
    del a.waiting["q"]  # resumed: its time counts from its last pass while waiting
    assert not a.stuck("q", 5, 10 * IDLE_S + 1) and a.stuck("q", 5, 11 * IDLE_S + 1)


class _Live(Aligning):
    """The alignment's side of a live consumer, over a stand-in client: known high-water marks, no broker."""

    def __init__(self, hw: dict[TopicPartition, int], expected: dict[TopicPartition, int]) -> None:
        self.hw, self.expected = hw, dict(expected)
        self.consumer = SimpleNamespace(highwater=self.hw.get, assignment=lambda: set(self.expected))
        self.align, self.pending, self.unresolved, self.log_ends = Alignment(22.5 * DAY), set(), {}, {}
        self.owned, self.overlap, self.held, self.monotonic = set(expected), SimpleNamespace(carry={}), None, \
            lambda: 0.0


def _recs(tp: TopicPartition, first: int, payloads: list[bytes]) -> list[SimpleNamespace]:
    return [SimpleNamespace(topic=tp.topic, partition=tp.partition, offset=first + i, value=p, key=None)
            for i, p in enumerate(payloads)]


def _store(live: _Live, batch: dict[TopicPartition, list[SimpleNamespace]], now: float) -> Cut:
    """`_cutter` of a batch applied to it as the pipeline applies it; the `Cut`."""
    records = [RawRecord(f"kafka:{tp.topic}", tp.partition, r.offset, r.value, "x") for tp, recs in batch.items()
               for r in recs]
    defer, found = live._cutter(batch, now)
    defer(records, list(decoded([r.payload for r in records])))
    return found


PRED, OUT = TopicPartition("predictions", 0), TopicPartition("outcomes", 0)


def test_live_outcomes_stamped_weeks_behind_the_predictions_hold_nothing_back() -> None:
    """Steady state, horizon 90 d (align_within 22.5 d): outcomes stamped at their prediction's time (30 d ago) and
    fresh predictions in one batch, both partitions at their log end once it is stored: nothing is given back (it
    gave every prediction back, paused their partition and read it again, batch after batch)."""
    live = _Live({PRED: 100, OUT: 20}, {PRED: 90, OUT: 17})
    batch = {PRED: _recs(PRED, 90, [pred(f"n{i}", 0.5, NOW - 60 + i) for i in range(10)]),
             OUT: _recs(OUT, 17, [outcome(f"h{i}", 1, NOW - 30 * DAY + i) for i in range(3)])}
    found = _store(live, batch, NOW)
    assert found.deferred == {}
    assert found.reached == {("kafka:predictions", 0): NOW - 51, ("kafka:outcomes", 0): NOW - 30 * DAY + 2}
    live.expected.update({PRED: 100, OUT: 20})
    live.align.stored(lambda key: PRED if key[0] == "kafka:predictions" else OUT, found)
    live.overlap.carry = {OUT: _recs(OUT, 20, [outcome("h3", 1, NOW - 30 * DAY + 3)])}  # polled while storing
    live.hw[OUT], live.log_ends = 21, {PRED: 104, OUT: 23}  # and a lag refresh saw records written since
    assert live._holding(carried=True) == set() and live._maintenance_ceiling() == math.inf
    assert live.align.moves(live._holding(carried=True), [PRED, OUT]) == (set(), set())


def test_a_partition_with_records_left_beyond_the_batch_still_holds_the_others_back() -> None:
    """The same batch with outcomes left beyond it (a backlog, its high-water mark ahead): the predictions more
    than align_within ahead of it are given back, as before; records it polled while the batch was stored still
    count as unread for maintenance, and so does the end asked from the broker of a partition resumed after a
    pause (not fetched since)."""
    live = _Live({PRED: 100, OUT: 5000}, {PRED: 90, OUT: 17})
    batch = {PRED: _recs(PRED, 90, [pred(f"n{i}", 0.5, NOW - 60 + i) for i in range(10)]),
             OUT: _recs(OUT, 17, [outcome(f"h{i}", 1, NOW - 30 * DAY + i) for i in range(3)])}
    found = _store(live, batch, NOW)
    assert found.deferred == {("kafka:predictions", 0): (90, NOW - 60)}
    live.expected.update({PRED: 100, OUT: 20})  # the predictions read again and stored since
    live.overlap.carry = {OUT: _recs(OUT, 20, [outcome("h3", 1, NOW - 30 * DAY + 3)])}
    live.hw[OUT] = 21  # the carry reaches the end, but the partition was a backlog when the batch was cut
    assert live._holding(carried=True) == {OUT}
    live.overlap.carry, live.expected[OUT] = {}, 21
    live._resumed([OUT])
    live.log_ends = {OUT: 900}  # written while it was paused: its high-water mark is stale
    assert live._holding(carried=True) == {OUT}
    live.hw[OUT] = 950  # fetched since
    assert live._holding(carried=True) == {OUT}
    live.expected[OUT] = 950
    live.log_ends = {OUT: 960}  # a later lag refresh: records written after its last fetch are live
    assert live._holding(carried=True) == set()


def test_a_partition_first_looked_at_after_its_first_fetch_counts_as_fetched() -> None:
    """Positioned (its fetch unknown), first looked at once its first fetch had brought records, so the high-water
    mark taken as 'then' was already the fresh one: once those records are stored, an end asked from the broker
    that saw a record written since is a live arrival, not a backlog (integrated main: test_kafka_live_alignment
    paused every prediction partition, as the check for a fetch since positioning waited for the high-water mark to
    move once more, and the lag refresh asked at each assignment supplied a later end)."""
    live = _Live({PRED: 100, OUT: 20}, {PRED: 90, OUT: 17})
    live.align.forget([PRED, OUT])  # positioned: not known to be fetched since
    live.align.unfetched = {tp: live.hw[tp] for tp in (PRED, OUT)}  # first looked at after the fetch
    batch = {PRED: _recs(PRED, 90, [pred(f"n{i}", 0.5, NOW - 60 + i) for i in range(10)]),
             OUT: _recs(OUT, 17, [outcome(f"h{i}", 1, NOW - 30 * DAY + i) for i in range(3)])}
    found = _store(live, batch, NOW)
    assert found.deferred == {}
    live.expected.update({PRED: 100, OUT: 20})
    live.align.stored(lambda key: PRED if key[0] == "kafka:predictions" else OUT, found)
    live.log_ends = {PRED: 101, OUT: 21}  # a lag refresh: one record written to each since its fetch
    assert live._holding(carried=True) == set()
    assert live.align.moves(live._holding(carried=True), [PRED, OUT]) == (set(), set())
