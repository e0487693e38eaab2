"""A hostile-input corpus through `driftline replay` (subprocess) and through the live Kafka consumer (`driftline
run` on the real tansu broker): every case is a dead letter with its documented reason, never a crash, a hang or
a silent reinterpretation; valid events around them are stored; what was stored before is intact; memory stays
bounded on a stream without newlines; an unexpected exception in one record becomes an `internal_error` letter.
"""

from __future__ import annotations

import resource
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from driftline.config import Config
from driftline.core.engine import Engine
from driftline.core.events import REASONS, decode
from driftline.ingest import isolation
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import replay
from driftline.storage.store import Store

LIMIT = 65536
"""limits.max_event_bytes of the corpus runs (a too_large case must still fit in one Kafka message)."""
TS = "2026-11-20T10:00:00Z"
P = '{"type":"prediction","prediction_id":"%s","model":"fraud","ts":"' + TS + '","score":0.7'


def _pred(pid: str, extra: str = "") -> bytes:
    return (P % pid + extra + "}").encode()


def _deep(tag: str, levels: int = 1000) -> bytes:
    return ('{"id":"%s","x":' % tag + "[" * levels + "]" * levels + "}").encode()


CORPUS: list[tuple[str, str, bytes, str]] = [
    # (case, topic kind, payload, reason)
    ("deep_ignored_field", "predictions", _pred("deep-1", ',"x":' + "[" * 1000 + "]" * 1000), "too_deep"),
    ("deep_issue14", "outcomes", _deep("deep-2"), "too_deep"),
    ("deep_objects", "predictions", ('{"id":"deep-3","a":' * 1000 + "1" + "}" * 1000).encode(), "too_deep"),
    ("too_large", "predictions", _pred("big-1", ',"pad":"' + "x" * (LIMIT + 10) + '"'), "too_large"),
    ("dup_model", "predictions", _pred("dup-1", ',"model":"churn"'), "duplicate_key"),
    ("dup_type", "predictions", b'{"type":"prediction","type":"outcome","prediction_id":"dup-2","model":"fraud",'
                                b'"ts":"' + TS.encode() + b'","score":0.5,"label":1}', "duplicate_key"),
    ("dup_escaped_key", "predictions", _pred("dup-3", ',"mod\\u0065l":"churn"'), "duplicate_key"),
    ("dup_feature", "predictions", _pred("dup-4", ',"features":{"amount":1,"amount":"x"}'), "duplicate_key"),
    ("feature_value_50k", "predictions", _pred("fv-1", ',"features":{"c":"' + "v" * 50_000 + '"}'),
     "feature_value_too_long"),
    ("feature_name_300", "predictions", _pred("fn-1", ',"features":{"' + "n" * 300 + '":1}'),
     "feature_name_too_long"),
    ("features_1001", "predictions", _pred("fc-1", ',"features":{' + ",".join(f'"f{i}":1' for i in range(1001))
                                           + "}"), "too_many_features"),
    ("feature_1e400", "predictions", _pred("fr-1", ',"features":{"a":1e400}'), "feature_out_of_range"),
    ("feature_int_500_digits", "predictions", _pred("fr-2", ',"features":{"a":' + "9" * 500 + "}"),
     "feature_out_of_range"),
    ("threshold_huge", "predictions", _pred("th-1", ',"threshold":1e300'), "threshold_out_of_range"),
    ("threshold_negative", "predictions", _pred("th-2", ',"threshold":-0.5'), "threshold_out_of_range"),
    ("threshold_string", "predictions", _pred("th-3", ',"threshold":"high"'), "wrong_type"),
    ("not_json", "predictions", b"this is not json", "invalid_json"),
    ("nan_literal", "predictions", b'{"type":"prediction","prediction_id":"nan-1","model":"fraud","ts":"'
                                   + TS.encode() + b'","score":NaN}', "invalid_json"),
    ("invalid_utf8", "predictions", b'{"type":"prediction","prediction_id":"\xff\xfe","model":"fraud"}',
     "invalid_json"),
    ("invalid_utf8_ignored_field", "predictions", _pred("utf-1")[:-1] + b',"note":"\xff\xfe"}', "invalid_json"),
    ("invalid_utf8_ignored_key", "outcomes", b'{"type":"outcome","prediction_id":"utf-2","label":1,"ts":"'
                                             + TS.encode() + b'","\xe9t\xe9":1}', "invalid_json"),
    ("array", "outcomes", b"[1, 2, 3]", "not_an_object"),
    ("cut_array", "outcomes", b"[1, 2", "invalid_json"),
    ("brackets_then_junk", "predictions", b"[[[[" + b"z" * 2000, "invalid_json"),
    ("unknown_type", "predictions", b'{"type":"click","prediction_id":"u-1"}', "unknown_type"),
    ("missing_score", "predictions", b'{"type":"prediction","prediction_id":"m-1","model":"fraud","ts":"'
                                     + TS.encode() + b'"}', "missing_field"),
    ("score_string", "predictions", (P % "w-1").replace('"score":0.7', '"score":"0.7"').encode() + b"}",
     "wrong_type"),
    ("features_array", "predictions", _pred("w-2", ',"features":[1,2]'), "wrong_type"),
    ("score_1_5", "predictions", (P % "s-1").replace("0.7", "1.5").encode() + b"}", "score_out_of_range"),
    ("label_7", "outcomes", b'{"type":"outcome","prediction_id":"l-1","label":7,"ts":"' + TS.encode() + b'"}',
     "label_invalid"),
    ("ts_bad", "predictions", (P % "t-1").replace(TS, "yesterday").encode() + b"}", "ts_invalid"),
    ("ts_millis", "predictions", (P % "t-2").replace('"' + TS + '"', "1764583200000").encode() + b"}",
     "ts_invalid"),
    ("ts_5000_digits", "predictions", (P % "t-3").replace('"' + TS + '"', "1" * 5000).encode() + b"}", "ts_invalid"),
    ("ts_1e400", "predictions", (P % "t-4").replace('"' + TS + '"', "1e400").encode() + b"}", "ts_invalid"),
    ("ts_negative_huge", "outcomes", b'{"type":"outcome","prediction_id":"t-5","label":1,"ts":-' + b"9" * 400 + b"}",
     "ts_invalid"),
    ("empty_id", "outcomes", b'{"type":"outcome","prediction_id":"","label":1,"ts":"' + TS.encode() + b'"}',
     "empty_id"),
    ("id_too_long", "predictions", _pred("i" * 201), "too_long"),
    ("nul_in_feature", "predictions", _pred("n-1", ',"features":{"c":"a\\u0000b"}'), "nul_in_text"),
    ("ts_in_future", "predictions", (P % "f-1").replace(TS, "2099-01-01T00:00:00Z").encode() + b"}",
     "ts_in_future"),
]
"""Every hostile case of issue 13 part 2 and issue 14 part 1, and one of each reason that existed before."""


def _valid(i: int) -> list[tuple[str, bytes]]:
    """A valid prediction and its outcome (topic kind, payload)."""
    pid = f"ok-{i}"
    return [("predictions", _pred(pid, ',"features":{"amount":%d,"country":"FR"}' % i)),
            ("outcomes", b'{"type":"outcome","prediction_id":"%s","label":%d,"ts":"2026-11-21T10:00:00Z"}'
             % (pid.encode(), i % 2))]


def _config(tmp: Path, **kafka: Any) -> Path:
    path = tmp / "driftline.yaml"
    doc: dict[str, Any] = {"limits": {"max_event_bytes": LIMIT}}
    if kafka:
        doc["kafka"] = kafka
    path.write_text(yaml.safe_dump(doc))
    return path


def _cli(*args: str, stdin: Any = None, preexec: Any = None, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "driftline.cli", *args], stdin=stdin, capture_output=True,
                          timeout=timeout, preexec_fn=preexec)


def _letters(db: Path) -> list[tuple[str, int, int, str, bytes]]:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT source, partition, \"offset\", reason, raw FROM dead_letters").fetchall()


def _counters(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as c:
        return {f"{n}:{lbl}": v for n, lbl, v in c.execute("SELECT name, label, value FROM counters")}


def _integrity(db: Path) -> str:
    with sqlite3.connect(db) as c:
        return c.execute("PRAGMA integrity_check").fetchone()[0]


def test_corpus_covers_every_reason() -> None:
    """The corpus holds one case per documented decode reason (internal_error is exercised by injection below)."""
    assert set(REASONS) - {"internal_error"} <= {r for *_, r in CORPUS}
    prefixes = [p[:4096] for _, _, p, _ in CORPUS]
    assert len(set(prefixes)) == len(prefixes), "each case must be recognisable by its stored raw prefix"


def test_corpus_through_replay(tmp_path: Path) -> None:
    """Each hostile line is a dead letter with its reason at its line; the valid line after each is stored; what an
    earlier replay stored is unchanged; exit status 0, no traceback, integrity_check ok; a re-run is a no-op."""
    config, db = _config(tmp_path), tmp_path / "h.db"
    base = tmp_path / "base.jsonl"
    base.write_bytes(b"".join(p + b"\n" for i in range(20) for _, p in _valid(i)))
    args = ["--config", str(config), "--db", f"sqlite:///{db}"]
    first = _cli(*args, "replay", str(base), "--json")
    assert first.returncode == 0, first.stderr.decode()
    before = _counters(db)
    assert before["events:prediction"] == 20

    lines: list[bytes] = []
    expected: dict[int, str] = {}
    for n, (_, _, payload, reason) in enumerate(CORPUS):
        expected[len(lines)] = reason
        lines.append(payload)
        lines.append(_valid(100 + n)[0][1])
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_bytes(b"\n".join(lines) + b"\n")
    run = _cli(*args, "replay", str(hostile), "--json")
    err = run.stderr.decode()
    assert run.returncode == 0, err
    assert "Traceback" not in err and "RecursionError" not in err
    got = {offset: reason for source, _, offset, reason, _ in _letters(db) if source.endswith("hostile.jsonl")}
    assert got == expected
    after = _counters(db)
    assert after["events:prediction"] == before["events:prediction"] + len(CORPUS)
    assert after["events:outcome"] == before["events:outcome"]
    for key, value in before.items():  # nothing stored before is lost
        if key.startswith(("events:", "joined:")):
            assert after[key] >= value, key
    assert Counter({k.split(":", 1)[1]: v for k, v in after.items() if k.startswith("dead_letters:")}) == Counter(
        r for *_, r in CORPUS)
    assert _integrity(db) == "ok"
    again = _cli(*args, "replay", str(hostile), "--json")
    assert again.returncode == 0 and _counters(db) == after


def _limit_address_space(limit: int) -> Any:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def test_stream_without_newlines_is_bounded_in_memory(tmp_path: Path) -> None:
    """`cat /dev/zero | driftline replay -`: 1 GiB without a newline, under a 768 MiB address-space limit, is one
    `too_large` dead letter and the valid line after it is stored (before: MemoryError, exit 1)."""
    limit = 768 << 20
    db = tmp_path / "z.db"
    valid = _pred("after-zeros").decode()
    env_args = ["--db", f"sqlite:///{db}"]
    calibrate = subprocess.run(["sh", "-c", 'printf "%s\\n" "$1" | "$2" -m driftline.cli --db "$3" replay -', "sh",
                                valid, sys.executable, f"sqlite:///{tmp_path / 'cal.db'}"],
                               capture_output=True, timeout=120, preexec_fn=_limit_address_space(limit))
    assert calibrate.returncode == 0, f"the limit is too tight for this machine: {calibrate.stderr.decode()}"
    feeder = subprocess.Popen(["sh", "-c", 'head -c 1073741824 /dev/zero; printf "\\n%s\\n" "$1"', "sh", valid],
                              stdout=subprocess.PIPE)
    try:
        run = _cli(*env_args, "replay", "-", stdin=feeder.stdout, preexec=_limit_address_space(limit), timeout=300)
    finally:
        assert feeder.stdout is not None
        feeder.stdout.close()
        feeder.wait(timeout=60)
    err = run.stderr.decode()
    assert run.returncode == 0, err[-2000:]
    assert "Traceback" not in err and "MemoryError" not in err
    letters = _letters(db)
    assert [(r, o) for _, _, o, r, _ in letters] == [("too_large", 0)]
    assert letters[0][4] == b"\x00" * 4096
    assert _counters(db)["events:prediction"] == 1


def _failing_engine(monkeypatch: pytest.MonkeyPatch, pid: str, where: str) -> None:
    """Make the engine raise on one prediction id: in `apply` (state half-mutated) or in `finish` (batch-wide), on
    the per-event path and on the batch path (core/batch.py) alike."""
    apply = Engine.apply
    apply_batch = isolation.apply_batch

    def poisoned(decoded: Any) -> Any:
        if decoded.event.prediction_id != pid or not hasattr(decoded.event, "score"):
            return decoded
        return decoded.__class__(decoded.event.__class__(**{
            **{f: getattr(decoded.event, f) for f in decoded.event.__struct_fields__},
            "features": {"poison": object()}}), decoded.ts)

    def raising_apply(self: Engine, decoded: Any, shard: int = 0) -> None:
        if decoded.event.prediction_id == pid and hasattr(decoded.event, "score"):
            if where == "apply":
                apply(self, decoded, shard)  # mutate the join view first, then fail
                raise KeyError("injected")
        apply(self, poisoned(decoded) if where == "finish" else decoded, shard)

    def raising_batch(engine: Engine, ok: Any) -> None:
        if where == "finish":
            ok = [(poisoned(d), shard) for d, shard in ok]
        apply_batch(engine, ok)  # mutate the engine's state first, then fail
        if where == "apply" and any(d.event.prediction_id == pid and hasattr(d.event, "score") for d, _ in ok):
            raise KeyError("injected")

    monkeypatch.setattr(Engine, "apply", raising_apply)
    monkeypatch.setattr(isolation, "apply_batch", raising_batch)


@pytest.mark.parametrize("where", ["apply", "finish"])
def test_unexpected_exception_is_an_internal_error_letter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           where: str) -> None:
    """Replay: an exception while applying one record (or in the batch-wide finish, traced to it) sets only that
    record aside as `internal_error` naming the exception class; the rest of the batch is stored exactly once."""
    store = Store(f"sqlite:///{tmp_path / 'i.db'}")
    store.migrate()
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(p + b"\n" for i in range(10) for _, p in _valid(i)))
    _failing_engine(monkeypatch, "ok-3", where)
    result = replay(Pipeline(Config(), store), str(path))
    assert (result.accepted, result.dead) == (19, 1)
    [letter] = store.dead_letters()
    assert letter["reason"] == "internal_error" and letter["offset"] == 6
    assert ("KeyError" if where == "apply" else "TypeError") in letter["detail"]
    counters = store.counters()
    assert counters[("events", "prediction")] == 9 and counters[("events", "outcome")] == 10
    assert counters[("dead_letters", "internal_error")] == 1
    assert store.positions(f"file:{path}")[0] == 20
    store.close()


def test_internal_error_does_not_stop_a_kafka_partition(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The live loop (in-memory broker stand-in): a record the engine fails on is a dead letter, the partition's
    position moves past it and the records after it are stored."""
    from test_kafka_loop import Clock, member, partitioned

    store = Store(f"sqlite:///{tmp_path / 'k.db'}")
    store.migrate()
    records = [(k, f"ok-{i}".encode(), p) for i in range(30) for k, p in _valid(i)]
    logs = partitioned(records)
    _failing_engine(monkeypatch, "ok-5", "apply")
    lc, fake = member(store, logs, Clock())
    fake.rebalance(set(logs))
    for _ in range(5):
        lc.step()
    assert sum(sum(store.positions(f"kafka:{t}").values()) for t in ("p", "o")) == len(records)
    assert [d["reason"] for d in store.dead_letters()] == ["internal_error"]
    assert store.counters()[("events", "prediction")] == 29
    store.close()


@pytest.mark.kafka
@pytest.mark.slow
def test_corpus_through_the_live_consumer(kafka_bootstrap: str, tmp_path: Path) -> None:
    """`driftline run` on the real broker: valid messages, then every hostile case on its topic, then more valid
    messages. The service keeps running, every case is a dead letter with its reason, later messages are stored,
    positions reach the ends of both topics, and the log holds no traceback."""
    from kafka_fixtures import create_topics, unique_name
    from kafka_service_support import StoreProbe, consistency, produce, start_service, wait_until

    topics = {"predictions": unique_name("hp"), "outcomes": unique_name("ho")}
    create_topics(kafka_bootstrap, topics.values(), 2)
    config = _config(tmp_path, predictions_topic=topics["predictions"], outcomes_topic=topics["outcomes"],
                     group_id=unique_name("hg"), batch_max_records=50,
                     options={"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000,
                              "max_poll_interval_ms": 20000})
    before = [(k, f"ok-{i}".encode(), p) for i in range(20) for k, p in _valid(i)]
    hostile = [(kind, f"h-{n}".encode(), payload) for n, (_, kind, payload, _) in enumerate(CORPUS)]
    hostile.append(("outcomes", b"h-empty", b""))  # an empty message (kafka-python gives b"" or None)
    after = [(k, f"ok-{i}".encode(), p) for i in range(20, 40) for k, p in _valid(i)]
    db = tmp_path / "live.db"
    migrated = Store(f"sqlite:///{db}")  # migrated first: the scheduler's start-up report must not race the schema
    migrated.migrate()
    migrated.close()
    produce(kafka_bootstrap, topics, before)
    svc = start_service(tmp_path, config, f"sqlite:///{db}", kafka_bootstrap)
    probe = StoreProbe(f"sqlite:///{db}", topics)
    records = before + hostile + after
    expect = {k: sum(1 for r in records if r[0] == k) for k in topics}
    try:
        wait_until(lambda: probe.total() == len(before), 90, "valid messages stored", procs=(svc,))
        produce(kafka_bootstrap, topics, hostile + after)
        wait_until(lambda: all(probe.total(k) == n for k, n in expect.items()), 90, "every message stored",
                   procs=(svc,))
        assert svc.proc.poll() is None, "the service stopped on a hostile message"
        assert svc.terminate() == 0
    finally:
        svc.kill()
        probe.close()
    log = svc.log()
    assert "Traceback" not in log and "RecursionError" not in log
    by_raw = {payload[:4096]: reason for _, _, payload, reason in CORPUS}
    by_raw[b""] = "invalid_json"
    got = {bytes(raw): reason for *_, reason, raw in _letters(db)}
    assert got == by_raw
    counters = _counters(db)
    assert counters["events:prediction"] == 40 and counters["events:outcome"] == 40
    positions, counted = consistency(f"sqlite:///{db}", topics)
    assert positions == counted == len(records)
    assert _integrity(db) == "ok"


_keys = st.sampled_from(["type", "prediction_id", "model", "ts", "score", "threshold", "variant", "label", "x",
                         "features"])
_values = st.sampled_from(['"prediction"', '"outcome"', '"p-1"', '"fraud"', '"2026-11-20T10:00:00Z"', "0.5", "1",
                           "null", '"a"', "true"])
_feature_pairs = st.lists(st.tuples(st.sampled_from(["a", "b", "model", "score"]), _values), max_size=4)


def _obj(pairs: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f'"{k}":{v}' for k, v in pairs) + "}"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_keys, _values), min_size=1, max_size=9), _feature_pairs, st.booleans(),
       st.sampled_from([None, "prediction", "outcome"]))
def test_duplicate_keys_are_always_refused_and_never_invented(pairs: list[tuple[str, str]],
                                                               features: list[tuple[str, str]], spaced: bool,
                                                               kind: str | None) -> None:
    """Whatever the event: `duplicate_key` exactly when a key repeats in the event object or its features (the
    cheap screen of the happy path never misses one, and never refuses an event without one)."""
    pairs = [(k, _obj(features) if k == "features" else v) for k, v in pairs]
    text = _obj(pairs)
    if spaced:
        text = text.replace('":', '" :')
    raw = text.encode()
    top = [k for k, _ in pairs]
    feats = [k for k, _ in features] if "features" in top else []
    repeated = len(set(top)) < len(top) or (top.count("features") == 1 and len(set(feats)) < len(feats))
    d = decode(raw, "prop", 0, 0, kind)
    assert (getattr(d, "reason", None) == "duplicate_key") == repeated, (raw, d)
