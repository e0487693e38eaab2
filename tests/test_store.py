"""The same store suite on SQLite and on the machine's PostgreSQL."""

from __future__ import annotations

import json

import pytest

from driftline.config import from_dict
from driftline.core.events import iso
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.ingest.replay import replay
from driftline.readouts.metrics import MetricsQuery, metrics_document
from driftline.storage.store import Store

from helpers import outcome, pred

T0 = 1_700_000_000.0


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'test.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    s = Store(url, clock=lambda: T0 + 100 * 86400)
    s.migrate()
    s.migrate()  # idempotent
    yield s
    s.close()


def _records(raws, source="file:x"):
    return [RawRecord(source, 0, i, r) for i, r in enumerate(raws)]


def _events():
    raws = []
    for i in range(200):
        raws.append(pred(f"p{i}", (i % 10) / 10 + 0.05, T0 + i * 600, variant="AB"[i % 2],
                         features={"amount": float(i), "country": "FR" if i % 3 else "DE"}))
        if i % 4:
            raws.append(outcome(f"p{i}", int(i % 10 >= 7), T0 + i * 600 + 3600))
    raws += [b"{broken", pred("p1", 0.1, T0, variant="B")]  # a dead letter and a duplicate
    return raws


def _doc(store, config, at=(T0 + 200 * 600) // 3600 * 3600 + 3600):
    # `at` is the bucket boundary after the last prediction: windows end at `at` aligned down (issue 15.3)
    return metrics_document(store, config, MetricsQuery("fraud", 7 * 86400, at=at))


def test_batch_writes_state_dead_letters_and_positions(store):
    config = from_dict({})
    res = Pipeline(config, store, clock=lambda: T0 + 86400).process_batch(_records(_events()))
    assert res.dead == 1 and res.duplicates == 1 and res.accepted == len(_events()) - 1
    assert store.positions("file:x") == {0: len(_events())}
    dl = store.dead_letters()
    assert dl[0]["reason"] == "invalid_json" and dl[0]["raw"] == b"{broken" and dl[0]["offset"] == 200 + 150
    counters = store.counters()
    assert counters[("dead_letters", "invalid_json")] == 1
    assert counters[("events", "prediction")] == 201 and counters[("duplicates", "prediction")] == 1
    doc = _doc(store, config)
    assert doc["counts"]["predictions"] == 200 and doc["counts"]["labelled"] == 150


def test_split_batches_equal_one_batch(store, tmp_path):
    config = from_dict({})
    p = Pipeline(config, store, clock=lambda: T0 + 86400)
    raws = _events()
    for i in range(0, len(raws), 37):
        p.process_batch([RawRecord("file:y", 0, j, raws[j]) for j in range(i, min(i + 37, len(raws)))])
    other = Store(f"sqlite:///{tmp_path / 'one.db'}")
    other.migrate()
    Pipeline(config, other, clock=lambda: T0 + 86400).process_batch(_records(raws))
    a, b = _doc(store, config), _doc(other, config)
    assert a["counts"] == b["counts"] and a["metrics"]["roc_auc"] == b["metrics"]["roc_auc"]
    assert a["metrics"]["brier"]["value"] == pytest.approx(b["metrics"]["brier"]["value"], abs=1e-12)


def test_replaying_a_file_twice_counts_once(store, tmp_path):
    config = from_dict({})
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(_events()) + b"\n")
    p = Pipeline(config, store, clock=lambda: T0 + 86400)
    first = replay(p, str(path), batch_size=50)
    assert first.records == len(_events())
    before = _doc(store, config)
    second = replay(p, str(path), batch_size=50)
    assert second.records == 0
    assert _doc(store, config)["counts"] == before["counts"]
    # even without the stored position (another path to the same events), ids make it a no-op
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    third = replay(p, str(copy), batch_size=50)
    assert third.records == len(_events()) and third.accepted == len(_events()) - 1
    assert _doc(store, config)["counts"] == before["counts"]


def test_failed_batch_writes_nothing(store):
    config = from_dict({})
    p = Pipeline(config, store, clock=lambda: T0 + 86400)
    p.process_batch(_records(_events()[:10]))
    before = (store.positions("file:x"), store.counters())

    class Boom(Exception):
        pass

    original = store.commit_batch

    def failing(conn, result, dead, positions, meta=None, expected_positions=None):
        original(conn, result, dead, positions, meta, expected_positions)
        raise Boom()

    store.commit_batch = failing  # type: ignore[method-assign]
    with pytest.raises(Boom):
        p.process_batch([RawRecord("file:x", 0, 10 + i, r) for i, r in enumerate(_events()[10:20])])
    store.commit_batch = original  # type: ignore[method-assign]
    assert (store.positions("file:x"), store.counters()) == before


def test_future_events_are_dead_lettered(store):
    p = Pipeline(from_dict({}), store, clock=lambda: T0)
    res = p.process_batch(_records([pred("f", 0.5, T0 + 3 * 86400)]))
    assert res.dead == 1 and store.dead_letters()[0]["reason"] == "ts_in_future"


def test_future_event_detail_shows_the_time_in_iso(store):
    """Tryout: an event sent with an ISO time was dead-lettered as `ts 1796585213 is more than 1 day ahead`."""
    p = Pipeline(from_dict({}), store, clock=lambda: T0)
    ts = T0 + 3 * 86400
    sent = {"type": "prediction", "prediction_id": "f", "model": "fraud", "ts": iso(ts), "score": 0.5}
    p.process_batch(_records([json.dumps(sent).encode()]))
    detail = store.dead_letters()[0]["detail"]
    assert detail == f"ts {iso(ts)} ({ts:.0f} s since the epoch) is more than 1 day ahead of the clock"


def test_names_longer_than_the_key_columns_are_dead_letters_not_a_failed_batch(store):
    """On PostgreSQL a 201-character id or variant used to fail the whole batch (VARCHAR(200)): a poison pill."""
    p = Pipeline(from_dict({}), store, clock=lambda: T0 + 86400)
    long = "x" * 201
    res = p.process_batch(_records([pred(long, 0.5, T0), pred("ok", 0.5, T0, variant=long),
                                    pred("ok2", 0.5, T0, model=long), pred("ok3", 0.5, T0, model_version=long),
                                    outcome(long, 1, T0), pred("x" * 200, 0.5, T0, variant="v" * 200)]))
    assert (res.accepted, res.dead) == (1, 5)
    assert {d["reason"] for d in store.dead_letters()} == {"too_long"}


def test_nul_characters_are_dead_letters_not_a_failed_batch(store):
    """PostgreSQL text cannot hold NUL: a `\\u0000` in an id used to fail the whole batch there."""
    p = Pipeline(from_dict({}), store, clock=lambda: T0 + 86400)
    raws = [pred("a\x00b", 0.5, T0), pred("ok", 0.5, T0, model="fr\x00aud"), outcome("z\x00", 1, T0),
            pred("f", 0.5, T0, features={"c": "x\x00"}), pred("fine", 0.5, T0, features={"c": "\\u0000"}),
            pred("extra", 0.5, T0, note="\x00")]
    res = p.process_batch(_records(raws))
    assert (res.accepted, res.dead) == (2, 4)
    assert {d["reason"] for d in store.dead_letters()} == {"nul_in_text"}


def test_maintenance_implicit_negatives_and_expiry(store):
    config = from_dict({"labels": {"policy": "implicit_negative_after", "implicit_negative_after": "30d",
                                   "horizon": "60d"}})
    p = Pipeline(config, store, clock=lambda: T0 + 100 * 86400)
    p.process_batch(_records([pred("a", 0.2, T0), pred("b", 0.8, T0 + 10 * 86400), outcome("b", 1, T0 + 11 * 86400),
                              pred("c", 0.6, T0 + 45 * 86400), pred("d", 0.1, T0 + 65 * 86400),
                              outcome("zz", 1, T0 + 20 * 86400)]))
    counts = p.maintain()
    assert counts[("implicit_negatives", "")] == 1  # a (T0) is > 30 d before the 65 d watermark, c (45 d) is not
    assert counts[("expired_predictions", "")] == 0  # a became an implicit negative before its join state expired
    assert counts[("expired_outcomes", "")] == 0
    doc = metrics_document(store, config, MetricsQuery("fraud", 100 * 86400, at=T0 + 66 * 86400))
    assert doc["counts"]["tn"] == 1 and doc["counts"]["tp"] == 1 and doc["counts"]["implicit_negatives"] == 1
    assert doc["counts"]["unlabelled_flagged"] == 1
    p.process_batch(_records([pred("e", 0.3, T0 + 95 * 86400)], source="file:z"))
    counts = p.maintain()  # watermark 95 d: join state before 35 d is past the 60 d horizon
    assert counts[("expired_outcomes", "")] == 1  # "zz" never met its prediction
    assert counts[("implicit_negatives", "")] == 1  # c (45 d) is now mature
    assert store.pending_outcomes() == 0


def test_metrics_json_contract(store):
    config = from_dict({})
    Pipeline(config, store, clock=lambda: T0 + 86400).process_batch(_records(_events()))
    doc = json.loads(json.dumps(_doc(store, config)))
    assert set(doc) >= {"model", "window", "threshold", "counts", "label_coverage", "metrics"}
    assert set(doc["window"]) >= {"start", "end"}
    assert set(doc["counts"]) >= {"predictions", "labelled", "positives", "negatives", "tp", "fp", "fn", "tn",
                                  "unlabelled"}
    for k in ("recall", "fpr", "precision", "specificity", "accuracy", "prevalence", "alert_rate"):
        assert set(doc["metrics"][k]) >= {"value", "low", "high", "n", "indicative"}
    for k in ("f1", "roc_auc", "average_precision", "brier", "log_loss", "ece"):
        assert "value" in doc["metrics"][k]
    assert set(doc["label_coverage"]) >= {"value", "low", "high", "n"}


def test_newest_event_times_are_the_max_and_never_move_back(store):
    p = Pipeline(from_dict({}), store, clock=lambda: T0 + 86400)
    assert store.newest_event() is None
    p.process_batch(_records([pred("a", 0.5, T0 + 500), pred("b", 0.5, T0 + 100), outcome("a", 1, T0 + 900)]))
    assert store.newest_event("prediction") == pytest.approx(T0 + 500, abs=1e-6)
    assert store.newest_event("outcome") == pytest.approx(T0 + 900, abs=1e-6)
    assert store.newest_event() == pytest.approx(T0 + 900, abs=1e-6)
    p.process_batch(_records([pred("c", 0.5, T0 + 50)], source="file:late"))  # an older event arrives later
    assert store.newest_event("prediction") == pytest.approx(T0 + 500, abs=1e-6)
    assert ("newest_event_us", "prediction") not in store.counters()
    assert store.join_size() == 3


def test_metrics_of_an_empty_database_say_so(store):
    doc = metrics_document(store, from_dict({}), MetricsQuery("fraud", 7 * 86400))
    assert doc["window"]["start"] is None and doc["note"] == "no predictions stored yet"
    assert doc["counts"]["predictions"] == 0 and doc["metrics"]["recall"]["value"] is None


def test_replay_isolates_a_record_the_database_refuses(store, tmp_path, monkeypatch):
    """A batch the database refuses is stored record by record: the refused one becomes a store_rejected dead
    letter, the others are stored, and the position moves past all of them."""
    from helpers import refuse_database_writes_of

    refuse_database_writes_of(monkeypatch, "p7")
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(_events()) + b"\n")
    p = Pipeline(from_dict({}), store, clock=lambda: T0 + 100 * 86400)
    total = replay(p, str(path), batch_size=64)
    assert [d["reason"] for d in store.dead_letters(reason="store_rejected")] == ["store_rejected"]
    assert total.dead == 2 and total.accepted == len(_events()) - 2  # {broken and p7
    assert store.positions(f"file:{path}")[0] == len(_events())


def test_a_file_with_a_very_long_path_replays_and_resumes(store, tmp_path):
    """The source column is 500 characters wide; a deeper path (PostgreSQL refused it) is cut and hashed."""
    deep = tmp_path / ("d" * 200) / ("e" * 200) / ("f" * 150)
    deep.mkdir(parents=True)
    path = deep / "events.jsonl"
    path.write_bytes(b"\n".join(_events()) + b"\n")
    p = Pipeline(from_dict({}), store, clock=lambda: T0 + 100 * 86400)
    assert replay(p, str(path)).records == len(_events())
    assert replay(p, str(path)).records == 0
    sibling = deep / "other.jsonl"  # same long prefix, another file: another source
    sibling.write_bytes(b"\n".join(_events()[:5]) + b"\n")
    assert replay(p, str(sibling)).records == 5


def test_counters_come_in_name_and_label_order_whatever_order_they_were_written(store):
    """`dead-letters --json` totals (and every other reader of counters) must not follow the table's physical
    order, which on PostgreSQL changes with updates (seen: totals in another order from run to run)."""
    from sqlalchemy import insert

    from driftline.storage import schema as t

    rows = [("dead_letters", "too_many_features", 3), ("dead_letters", "label_invalid", 2),
            ("events", "prediction", 5), ("dead_letters", "invalid_json", 1), ("duplicates", "outcome", 4)]
    with store.write() as conn:
        for name, label, value in rows:
            conn.execute(insert(t.counters).values(name=name, label=label, value=value))
    got = store.counters()
    assert list(got) == sorted(got)
    assert got[("dead_letters", "too_many_features")] == 3
