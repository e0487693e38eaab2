"""The C-level batch helpers of the live consumer (kafka/batches.py) against the record-by-record reference, on
dirty input: tombstones, null/str/int keys, bytes subclasses, records without a key, unordered and odd offsets."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from driftline.ingest.keys import NULL_KEY, key_detail, key_problem, keys_match
from driftline.ingest.pipeline import RawRecord
from driftline.kafka.batches import at_or_after, raw_records, record_key

Rec = namedtuple("Rec", "topic partition offset key value")
NoKey = namedtuple("NoKey", "offset value")


class Bytes(bytes):
    """A bytes subclass: the fast path must not take it for plain bytes."""


def reference_raws(recs: list[Any], source: str, partition: int, kind: str) -> list[RawRecord]:
    return [RawRecord(source, partition, r.offset, r.value if r.value is not None else b"", kind, record_key(r))
            for r in recs]


keys = st.one_of(st.binary(max_size=6), st.none(), st.text(max_size=4), st.integers(-5, 5),
                 st.binary(max_size=4).map(Bytes))
values = st.one_of(st.binary(max_size=12), st.none(), st.binary(max_size=4).map(Bytes))
offsets = st.one_of(st.integers(0, 50), st.booleans())


@st.composite
def records(draw: Any, clean: bool = False) -> list[Any]:
    n = draw(st.integers(0, 12))
    if clean:
        start = draw(st.integers(0, 1000))
        return [Rec("t", 0, start + i, draw(st.binary(max_size=6)), draw(st.binary(max_size=12))) for i in range(n)]
    if draw(st.booleans()):
        return [NoKey(draw(offsets), draw(values)) for _ in range(n)]
    return [Rec("t", 0, draw(offsets), draw(keys), draw(values)) for _ in range(n)]


@settings(max_examples=300, deadline=None)
@given(st.one_of(records(), records(clean=True)), st.sampled_from(["prediction", "outcome"]), st.integers(0, 3))
def test_raw_records_equal_the_reference(recs: list[Any], kind: str, partition: int) -> None:
    got = raw_records(recs, "kafka:t", partition, kind)
    want = reference_raws(recs, "kafka:t", partition, kind)
    assert got == want
    assert [type(r.payload) for r in got] == [type(r.payload) for r in want]
    assert [type(r.key) for r in got] == [type(r.key) for r in want]


@settings(max_examples=300, deadline=None)
@given(st.one_of(records(), records(clean=True)), st.integers(-2, 1010))
def test_at_or_after_equals_the_reference(recs: list[Any], start: int) -> None:
    got = at_or_after(recs, start)
    assert got == [r for r in recs if r.offset >= start]
    assert all(a is b for a, b in zip(got, [r for r in recs if r.offset >= start]))


def test_a_clean_run_takes_the_fast_paths_unchanged() -> None:
    recs = [Rec("t", 1, 10 + i, b"k%d" % i, b"v%d" % i) for i in range(5)]
    assert at_or_after(recs, 10) is recs
    assert at_or_after(recs, 12) == recs[2:]
    assert raw_records(recs, "kafka:t", 1, "outcome")[3] == RawRecord("kafka:t", 1, 13, b"v3", "outcome", b"k3")


def test_tombstones_and_null_keys_fall_back() -> None:
    recs = [Rec("t", 0, 0, None, None), Rec("t", 0, 1, "s", b"x"), Rec("t", 0, 2, 7, b"y")]
    assert [(r.payload, r.key) for r in raw_records(recs, "kafka:t", 0, "prediction")] == \
        [(b"", b""), (b"x", b"s"), (b"y", b"7")]


def test_a_null_key_is_missing_and_an_empty_key_is_a_mismatch() -> None:
    """SRE tryout: an empty key (b"", a key the producer set, hashed to a partition) was dead-lettered key_missing
    ('record has no key') like a null key. Both reach the check told apart, on the fast path and the reference."""
    for recs in ([Rec("t", 0, 0, None, b"a"), Rec("t", 0, 1, b"", b"b")], [Rec("t", 0, 1, b"", b"b")]):
        keys = [r.key for r in raw_records(recs, "kafka:t", 0, "outcome")]
        assert [key_problem(k, "tx-1") for k in keys] == ["key_missing", "key_mismatch"][-len(recs):]
    assert record_key(Rec("t", 0, 0, None, b"a")) is NULL_KEY and type(record_key(Rec("t", 0, 0, b"", b""))) is bytes
    assert key_detail("key_mismatch", b"", "tx-1") == "key '' is not the prediction_id 'tx-1'"
    assert not keys_match([NULL_KEY], ["tx-1"]) and not keys_match([b""], ["tx-1"])


def test_a_key_that_is_not_utf8_is_shown_by_its_bytes() -> None:
    """SRE tryout: keys b'\\xff\\xfe' and b'\\xfe\\xfd' were both shown as '��' in the key_mismatch detail (decoded with
    replacement characters), so the producer's bytes could not be found from `dead-letters`."""
    shown = "key b'\\xff\\xfe' (not UTF-8) is not the prediction_id 'k-4'"
    assert key_detail("key_mismatch", b"\xff\xfe", "k-4") == shown
    assert key_detail("key_mismatch", b"\x1b[31m", "k") == "key '\\x1b[31m' is not the prediction_id 'k'"
    cut = key_detail("key_mismatch", b"a" * 199 + "é".encode(), "k")  # valid UTF-8, cut inside its last character
    assert cut == f"key {'a' * 199!r} is not the prediction_id 'k'"


def test_fill_stops_at_the_record_that_brings_the_batch_to_max_bytes() -> None:
    """SRE tryout: 900 valid events of ~1 MB (under limits.max_event_bytes) made batches of up to 20,000 records,
    bounded by count only. Now a batch ends at the record that crosses kafka.batch_max_bytes; what a poll brought
    past it is handed back for the next batch, and no further poll is made."""
    import threading

    from driftline.kafka.batches import fill

    big = 400_000
    asked: list[int] = []
    feed = [{"p0": [NoKey(o, b"x" * big) for o in (2, 3, 4)]}, {"p0": [NoKey(9, b"x")]}]

    def poll(timeout_ms: int, max_records: int) -> dict:
        asked.append(max_records)
        return feed.pop(0)

    first = {"p0": [NoKey(0, b"x" * big), NoKey(1, None)]}  # a tombstone counts 0 bytes
    batch, rest = fill(poll, first, 20000, 0.25, threading.Event(), lambda: False, lambda: 0.0, max_bytes=1 << 20)
    assert [r.offset for r in batch["p0"]] == [0, 1, 2, 3]  # 1.2 MB: offset 3 brings it past 1 MiB
    assert [r.offset for r in rest["p0"]] == [4] and len(asked) == 1  # the bound reached: no second poll


def test_cut_keeps_at_least_one_record_and_carries_whole_later_partitions() -> None:
    from driftline.kafka.batches import cut

    one = {"a": [NoKey(0, b"x" * 3000), NoKey(1, b"y")], "b": [NoKey(0, b"z")]}
    kept, rest = cut(one, 1024)  # a single record past the bound still makes a batch (the stream progresses)
    assert {tp: [r.offset for r in recs] for tp, recs in kept.items()} == {"a": [0]}
    assert {tp: [r.offset for r in recs] for tp, recs in rest.items()} == {"a": [1], "b": [0]}
    spread = {"a": [NoKey(0, b"x" * 600)], "b": [NoKey(0, b"x" * 300), NoKey(1, b"x" * 200), NoKey(2, b"x")]}
    kept, rest = cut(spread, 1024)  # 600 + 300 + 200 crosses 1024 at b[1]
    assert [r.offset for r in kept["b"]] == [0, 1] and [r.offset for r in rest["b"]] == [2] and "a" not in rest
    assert cut(spread, 10_000) == (spread, {})


def test_fill_does_not_linger_for_a_backlog_already_in_the_log() -> None:
    """A batch lingered for one more fetch round trip while the log already held more records than were polled
    (the first batch of a backlog: 25-40 ms with the store idle, run_process_bench); it lingers only when the polled
    partitions are at their (known) end."""
    import threading

    from driftline.kafka.batches import backlog_waiting, fill

    asked: list[int] = []

    def poll(timeout_ms: int, max_records: int) -> dict:
        asked.append(max_records)
        return {"p0": [NoKey(3, b"x")]}

    first = {"p0": [NoKey(0, b"x"), NoKey(1, b"x")], "p1": []}
    ends = {"p0": 50, "p1": None}
    batch, rest = fill(poll, first, 100, 0.25, threading.Event(), lambda: False, lambda: 0.0,
                       backlog=lambda got: backlog_waiting(got, ends.get))
    assert asked == [] and [r.offset for r in batch["p0"]] == [0, 1] and rest == {}
    ends["p0"] = 2  # polled up to the log end: a live stream, lingering gathers what comes next
    batch, _ = fill(poll, first, 3, 0.25, threading.Event(), lambda: False, lambda: 0.0,
                    backlog=lambda got: backlog_waiting(got, ends.get))
    assert asked == [1] and [r.offset for r in batch["p0"]] == [0, 1, 3]
    assert not backlog_waiting({"p0": [NoKey(7, b"x")]}, lambda tp: None)  # end unknown: no backlog
