"""The threshold in force is recorded at ingest (core/flag_range: each bucket's lowest and highest threshold), not
inferred from score histograms: half of an hour's events at 0.5 and half at 0.6, with no 0.5-event scoring in
[0.5, 0.6), read as one cut at 0.6 ('flagged at score ≥ 0.6') in metrics and ab. Buckets of older versions (no
range) still fall back to the inference, and say so."""

from __future__ import annotations

import json
import math
import sqlite3
import sys
from pathlib import Path

import msgspec
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.cli import main
from driftline.core.engine import EngineSettings
from driftline.core.flag_range import EMPTY, FROM_CONFIG, FROM_EVENTS, range_sum
from driftline.core.stats import BucketStats, merge
from driftline.core.window_sum import flag_record, sum_encoded
from driftline.storage.compaction import COMPACTED_SHARD, compact
from driftline.storage.store import Store

sys.path.insert(0, str(Path(__file__).parent))
from helpers import decoded, outcome, pred, replayed_db  # noqa: E402
from test_batch_engine import JoinStore, _batches, _step  # noqa: E402

T0 = 1_764_547_200.0  # 2025-12-01 00:00 UTC
AT = ["--at", "2025-12-02T00:00:00Z", "--window", "1d"]


def _mixed_hour() -> list[bytes]:
    """600 predictions in one hour, alternately at 0.5 and 0.6; those at 0.5 never score in [0.5, 0.6), so one
    cut at 0.6 explains every flag; each with its outcome, variants A and B."""
    rng = np.random.default_rng(1)
    lines = []
    for i in range(600):
        t = 0.5 if i % 2 == 0 else 0.6
        s = float(np.round(rng.uniform(0, 1), 4))
        while t == 0.5 and 0.5 <= s < 0.6:
            s = float(np.round(rng.uniform(0, 1), 4))
        lines.append(pred(f"p{i}", s, T0 + i * 5, variant="A" if i % 4 < 2 else "B", threshold=t))
        lines.append(outcome(f"p{i}", int(rng.random() < s), T0 + i * 5 + 600))
    return lines


def _json(capsys, *argv: str) -> dict:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_thresholds_varying_within_an_hour_read_as_mixed_through_the_cli(tmp_path: Path, capsys) -> None:
    url = replayed_db(tmp_path, _mixed_hour(), capsys)
    doc = _json(capsys, "--db", url, "metrics", "--json", *AT)
    flags = doc["threshold_in_force"]
    assert doc["threshold"] is None and flags["mixed"] and flags["basis"] == "recorded"
    assert flags["range"] == [0.5, 0.6] and flags["from_events"] and not flags["from_config"]
    capsys.readouterr()
    assert main(["--db", url, "metrics", *AT]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "flagged at mixed thresholds (from 0.5 to 0.6; config 0.5)" in out and "score ≥ 0.6" not in out
    ab = _json(capsys, "--db", url, "ab", "--json", *AT)
    assert ab["threshold"] is None and ab["threshold_in_force"]["range"] == [0.5, 0.6]
    assert all(a["threshold_in_force"]["range"] == [0.5, 0.6] for a in ab["arms"].values())


def test_a_threshold_off_the_score_grid_is_shown_and_used_exactly(tmp_path: Path, capsys) -> None:
    """The inference is exact only to the fine score grid: 0.6234 read back as 0.62."""
    rng = np.random.default_rng(2)
    lines = [pred(f"q{i}", float(np.round(rng.uniform(0, 1), 4)), T0 + i * 30, threshold=0.6234) for i in range(400)]
    url = replayed_db(tmp_path, lines, capsys)
    doc = _json(capsys, "--db", url, "metrics", "--json", *AT)
    assert doc["threshold"] == 0.6234 and doc["threshold_in_force"]["source"] == "events"
    cal = _json(capsys, "--db", url, "calibration", "--json", *AT)
    assert cal["threshold"] == cal["early_warning"]["threshold"] == 0.6234


def test_a_config_threshold_changed_since_ingest_is_named_as_the_config_of_then(tmp_path: Path, capsys) -> None:
    lines = [pred(f"c{i}", i / 100, T0 + i) for i in range(100)]
    url = replayed_db(tmp_path, lines + [outcome(f"c{i}", int(i % 3 == 0), T0 + 600 + i) for i in range(100)], capsys)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("threshold: 0.7\n")
    doc = _json(capsys, "--db", url, "--config", str(cfg), "metrics", "--json", *AT)
    flags = doc["threshold_in_force"]
    assert doc["threshold"] == 0.5 and flags["from_config"] and flags["from_events"] is False
    capsys.readouterr()
    assert main(["--db", url, "--config", str(cfg), "metrics", *AT]) == 0
    assert "the config's threshold when ingested, not today's 0.7" in " ".join(capsys.readouterr().out.split())
    out = tmp_path / "rep"
    rep = _json(capsys, "--db", url, "--config", str(cfg), "report", "--week", "2025-W49", "--out", str(out),
                "--json")["report"]
    rows = {r["threshold"]: r for r in rep["thresholds"]["rows"]}
    assert rows[0.5]["mark"] == "in force (config’s when ingested threshold)"
    assert "scoring 0.5 or more (the config's threshold when ingested; today's is 0.7)" in \
        next(out.glob("*.md")).read_text()


def _strip_ranges(url: str) -> None:
    """Rewrite every stored bucket as an older version wrote it: without "tr"."""
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        for rowid, data in conn.execute("SELECT rowid, data FROM buckets").fetchall():
            doc = msgspec.msgpack.decode(data)
            doc.pop("tr", None)
            conn.execute("UPDATE buckets SET data = ? WHERE rowid = ?", (msgspec.msgpack.encode(doc), rowid))


def test_buckets_of_an_older_version_fall_back_to_the_inference_and_say_so(tmp_path: Path, capsys) -> None:
    url = replayed_db(tmp_path, [pred(f"o{i}", i / 400, T0 + i, threshold=0.7) for i in range(400)], capsys)
    _strip_ranges(url)
    doc = _json(capsys, "--db", url, "metrics", "--json", *AT)
    assert doc["threshold"] == 0.7 and doc["threshold_in_force"]["basis"] == "inferred"
    assert doc["threshold_in_force"]["from_config"] is None
    capsys.readouterr()
    assert main(["--db", url, "metrics", *AT]) == 0
    assert "(inferred from score histograms: buckets of an older version)" in " ".join(capsys.readouterr().out.split())


def test_a_window_over_an_upgrade_reads_recorded_buckets_as_recorded(tmp_path: Path, capsys) -> None:
    """An older version's hour (no range, flagged at 0.7) beside a newer hour whose recorded thresholds varied
    (0.6 and 0.8 alternately): the inference is for the older bucket only, so the window lists 0.6, 0.7 and 0.8,
    not a cut the newer hour's counts happen to fit (it read 0.741 when every bucket was inferred)."""
    rng = np.random.default_rng(5)
    old = [pred(f"o{i}", float(np.round(rng.uniform(0, 1), 3)), T0 + i * 5, threshold=0.7) for i in range(300)]
    url = replayed_db(tmp_path, old, capsys)
    _strip_ranges(url)
    new = tmp_path / "new.jsonl"
    new.write_bytes(b"\n".join(pred(f"n{i}", float(np.round(rng.uniform(0, 1), 3)), T0 + 3600 + i * 5,
                                    threshold=0.6 if i % 2 else 0.8) for i in range(300)) + b"\n")
    assert main(["--db", url, "replay", str(new), "--json"]) == 0
    flags = _json(capsys, "--db", url, "metrics", "--json", *AT)["threshold_in_force"]
    assert flags["basis"] == "inferred" and flags["thresholds"] == [0.6, 0.7, 0.8]


def _bucket(thresholds: list[float | None], configured: float = 0.5) -> BucketStats:
    """A bucket's delta from predictions at these thresholds (None: the config's), through the engine."""
    from driftline.core.engine import Engine, JoinView

    eng = Engine(EngineSettings(threshold=configured), JoinView())
    for d in decoded([pred(f"b{i}", 0.5, T0 + i, **({} if t is None else {"threshold": t}))
                      for i, t in enumerate(thresholds)]):
        eng.apply(d)
    (delta,) = eng.finish().deltas.values()
    return delta


def test_old_blob_without_the_field_decodes_as_unknown_and_a_stale_one_too() -> None:
    b = _bucket([0.3, 0.8, None])
    assert b.flag_range == (0.3, 0.8, FROM_CONFIG | FROM_EVENTS)
    doc = msgspec.msgpack.decode(b.to_bytes())
    assert doc["tr"] == [0.3, 0.8, 3, 3]
    del doc["tr"]
    old = msgspec.msgpack.encode(doc)
    assert BucketStats.from_bytes(old).flag_range is None and flag_record(old) == (None, 3)
    assert BucketStats().to_bytes() == msgspec.msgpack.encode(  # an empty bucket encodes as before: no "tr"
        {k: v for k, v in msgspec.msgpack.decode(BucketStats().to_bytes()).items() if k != "tr"})
    assert BucketStats.from_bytes(BucketStats().to_bytes()).flag_range == EMPTY
    doc = msgspec.msgpack.decode(b.to_bytes())
    doc["conf"][5] += 2  # an older writer added two predictions, keeping "tr" as it was
    assert BucketStats.from_bytes(msgspec.msgpack.encode(doc)).flag_range is None


def test_merge_and_sum_take_min_max_and_unknown_wins() -> None:
    a, b = _bucket([0.3, 0.4]), _bucket([None, 0.9])
    assert range_sum([a.flag_range, b.flag_range]) == (0.3, 0.9, FROM_CONFIG | FROM_EVENTS)
    assert (a + b).flag_range == merge([a, b]).flag_range == (0.3, 0.9, 3)
    assert sum_encoded([a.to_bytes(), b.to_bytes()]).flag_range == (0.3, 0.9, 3)
    assert range_sum([a.flag_range, None, EMPTY]) is None
    assert (a + BucketStats()).flag_range == a.flag_range


def test_compaction_keeps_each_days_range(tmp_path: Path, capsys) -> None:
    """Hours alternately at 0.5 and 0.6 (each bucket one threshold), merged into a day row: its range is [0.5, 0.6];
    a day holding one bucket of an older version has none, and its window is inferred."""
    lines = [pred(f"d{i}", (i % 10) / 10 + 0.05, T0 + i * 1800, threshold=0.5 if (i // 2) % 2 == 0 else 0.6)
             for i in range(48)]
    lines += [pred(f"e{i}", (i % 10) / 10 + 0.05, T0 + 86400 + i * 1800, threshold=0.6) for i in range(48)]
    url = replayed_db(tmp_path, lines, capsys)
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:  # the second day's first hour: an older version's
        (data,) = conn.execute("SELECT data FROM buckets WHERE bucket_start = ?", (T0 + 86400,)).fetchone()
        doc = msgspec.msgpack.decode(data)
        del doc["tr"]
        conn.execute("UPDATE buckets SET data = ? WHERE bucket_start = ?", (msgspec.msgpack.encode(doc), T0 + 86400))
    assert compact(Store(url), T0 + 2 * 86400).groups == 2
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        rows = dict(conn.execute("SELECT bucket_start, data FROM buckets WHERE shard = ?", (COMPACTED_SHARD,)))
    assert BucketStats.from_bytes(rows[int(T0)]).flag_range == (0.5, 0.6, FROM_EVENTS)
    assert BucketStats.from_bytes(rows[int(T0) + 86400]).flag_range is None
    day1 = _json(capsys, "--db", url, "metrics", "--json", *AT)["threshold_in_force"]
    assert day1["basis"] == "recorded" and day1["range"] == [0.5, 0.6] and day1["mixed"]
    day2 = _json(capsys, "--db", url, "metrics", "--json", "--at", "2025-12-03T00:00:00Z", "--window", "1d")
    assert day2["threshold_in_force"]["basis"] == "inferred" and day2["threshold"] == 0.6


@st.composite
def _streams(draw):
    """Predictions at several thresholds (or the config's) and their outcomes: none, corrections, stale ones;
    exact duplicates; two arrival orders of the same events and two batch splits."""
    raws: list[bytes] = []
    for i in range(draw(st.integers(1, 25))):
        ts = T0 + draw(st.integers(0, 6 * 3600))  # a few hours: buckets hold several thresholds
        kw = draw(st.sampled_from([{}, {"threshold": 0.2}, {"threshold": 0.55}, {"threshold": 0.9}]))
        raws.append(pred(f"id{i}", draw(st.floats(0, 1)), ts, variant=draw(st.sampled_from(["A", "B"])), **kw))
        if draw(st.integers(0, 5)) == 0:
            raws.append(raws[-1])
        for _ in range(draw(st.integers(0, 3))):
            raws.append(outcome(f"id{i}", draw(st.integers(0, 1)), ts + draw(st.integers(-600, 20 * 86400))))
    orders = [draw(st.permutations(range(len(raws)))) for _ in range(2)]
    cuts = [draw(st.lists(st.integers(0, 200), max_size=4)) for _ in range(2)]
    return [[raws[k] for k in o] for o in orders], cuts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_streams(), st.booleans())
def test_recorded_ranges_do_not_depend_on_arrival_order(stream, maintain) -> None:
    """Relabels, corrections, implicit negatives and expiry leave a prediction's recorded threshold as it was: any
    arrival order and batch split gives every bucket the same range (batch path and per-event engine alike)."""
    orders, cuts = stream
    s = EngineSettings(threshold=0.4)
    got = []
    for raws, cut in zip(orders, cuts):
        ok = [(d, 0) for d in decoded(raws)]
        ref, new = JoinStore(), JoinStore()
        for a, b in _batches(len(ok), cut):
            _step(s, ref, new, ok[a:b], 2 * 86400.0 if maintain else None)
        got.append({k: v.flag_range for k, v in new.buckets.items() if v.predictions})
    assert got[0] == got[1]
    assert all(r is not None and math.isfinite(r[0]) and r[2] for r in got[0].values())
