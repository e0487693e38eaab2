"""History replayed behind newer stored events (user tryouts): the label horizon counts back from the newest event
stored, so a backfill of 4-month-old events next to live ones expired on arrival — predictions, then their outcomes
— and nothing said so; and a second copy of it (stdin, or the file under another name) was not seen as duplicates
(their join state was gone): every count doubled. Events older than the horizon behind the watermark are now
dead-lettered past_horizon, and the replay warns (stderr, `--json` `warnings`); a replay into its own database, or
one that brings newer events, does not."""

from __future__ import annotations

import json

from driftline.cli import main
from driftline.ingest.simulate import SimSpec, stream


def _files(tmp_path):
    events = list(stream(SimSpec(start=1785542400.0 - 3 * 86400, days=3, per_day=400, seed=11)))  # to 2026-08-01
    preds = [e for e in events if e["type"] == "prediction"]
    outs = [e for e in events if e["type"] == "outcome"]
    paths = {}
    for name, rows in (("p", preds), ("o", outs), ("all", events)):
        paths[name] = tmp_path / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps(r) + "\n" for r in rows))
    live = tmp_path / "live.jsonl"
    live.write_text(json.dumps({"type": "prediction", "prediction_id": "live-1", "model": "fraud",
                                "ts": "2026-12-05T01:00:00Z", "score": 0.2}) + "\n")
    return paths, live, len(preds), len(outs)


def _replay(db: str, path, capsys) -> tuple[dict, str]:
    assert main(["--db", db, "replay", str(path), "--json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), " ".join(err.split())


def test_a_backfill_behind_newer_events_is_dead_lettered_with_a_warning_and_never_counted(tmp_path, capsys) -> None:
    paths, live, n_preds, n_outs = _files(tmp_path)
    db = f"sqlite:///{tmp_path / 'live.db'}"
    _replay(db, live, capsys)
    before = json.loads(_metrics(db, capsys))
    doc, err = _replay(db, paths["p"], capsys)
    assert (doc["dead_lettered"], doc["predictions"], doc["expired_predictions"]) == (n_preds, 0, 0)
    assert f"{n_preds:,} events of this replay were dead-lettered past_horizon" in err and len(doc["warnings"]) == 1
    assert "older than the label horizon (90d) behind the newest event already stored (2026-12-05T01:00:00Z)" in err
    doc, err = _replay(db, paths["o"], capsys)
    assert (doc["dead_lettered"], doc["outcomes"], doc["expired_outcomes"]) == (n_outs, 0, 0)
    copy = tmp_path / "copy.jsonl"  # a second copy under another name: refused again, nothing counted twice
    copy.write_text(paths["all"].read_text())
    doc, _ = _replay(db, copy, capsys)
    assert doc["dead_lettered"] == doc["records"] and doc["accepted"] == 0
    assert json.loads(_metrics(db, capsys)) == before
    assert main(["--db", db, "dead-letters", "--json", "--reason", "past_horizon"]) == 0
    letters = json.loads(capsys.readouterr().out)
    assert letters["totals"]["past_horizon"] == n_preds + n_outs + doc["records"]


def _metrics(db: str, capsys) -> str:
    assert main(["--db", db, "metrics", "--json", "--at", "2026-08-01T00:00:00Z", "--window", "3d"]) == 0
    return capsys.readouterr().out


def test_no_warning_for_history_in_its_own_database_or_for_newer_events(tmp_path, capsys) -> None:
    paths, live, _, _ = _files(tmp_path)
    db = f"sqlite:///{tmp_path / 'own.db'}"
    doc, err = _replay(db, paths["all"], capsys)
    assert doc["warnings"] == [] and "warning" not in err
    doc, err = _replay(db, live, capsys)  # newer events move the horizon: old ones expire as they should
    assert doc["warnings"] == [] and "warning" not in err


def _lines(tmp_path, name: str, *events: dict) -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return str(path)


NEW = {"type": "prediction", "prediction_id": "n1", "model": "churn", "ts": "2026-11-25T10:00:00Z", "score": 0.7}
OLD = {"type": "prediction", "prediction_id": "o1", "model": "churn", "ts": "2025-01-02T00:00:00Z", "score": 0.5}


def test_an_old_event_accepted_with_newer_ones_then_expired_is_warned_about(tmp_path, capsys) -> None:
    """New-user tryout: on an empty database the old event is accepted (no watermark was stored before its batch;
    any split must end in the same state, so acceptance is unchanged), then expired by the replay's maintenance,
    and nothing said so. The replay now warns with the count, whatever the split and order."""
    for i, events in enumerate(((NEW, OLD), (OLD, NEW))):  # in one batch, in either order
        db = f"sqlite:///{tmp_path / f'mix{i}.db'}"
        assert main(["--db", db, "replay", _lines(tmp_path, f"mix{i}.jsonl", *events), "--json"]) == 0
        out, err = capsys.readouterr()
        doc = json.loads(out)
        assert (doc["accepted"], doc["dead_lettered"], doc["expired_predictions"]) == (2, 0, 1)
        (warning,) = doc["warnings"]
        assert warning.startswith("1 prediction stored by this replay was expired during it")
        assert "label horizon (90d) older than the newest event (2026-11-25T10:00:00Z)" in warning
        assert "an outcome arriving for it later cannot join" in warning
        assert "warning: 1 prediction stored by this replay" in " ".join(err.split())
    db = f"sqlite:///{tmp_path / 'sorted.db'}"  # oldest first, one batch each: the same state, the same warning
    assert main(["--db", db, "replay", _lines(tmp_path, "mix1.jsonl", OLD, NEW), "--json", "--batch-size", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"][0].startswith("1 prediction stored by this replay")
    db = f"sqlite:///{tmp_path / 'behind.db'}"  # newest first, one batch each: refused past_horizon, as before
    assert main(["--db", db, "replay", _lines(tmp_path, "mix0.jsonl", NEW, OLD), "--json", "--batch-size", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["dead_lettered"], doc["expired_predictions"]) == (1, 0) and "past_horizon" in doc["warnings"][0]


def test_no_expiry_warning_for_an_old_prediction_labelled_in_the_same_replay(tmp_path, capsys) -> None:
    out = {"type": "outcome", "prediction_id": "o1", "label": 1, "ts": "2025-01-03T00:00:00Z"}
    db = f"sqlite:///{tmp_path / 'l.db'}"
    assert main(["--db", db, "replay", _lines(tmp_path, "l.jsonl", NEW, OLD, out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["expired_predictions"], doc["warnings"]) == (0, [])


def test_the_replays_key_log_is_bounded_and_its_warning_says_when_it_counted_part() -> None:
    """The key log of a replay holds at most its bound (8 bytes a prediction: a replay of any length stays within
    the memory bound); past it the warning says its count is a lower bound."""
    from collections import Counter

    from driftline.commands.replay_warnings import expired_warning
    from driftline.ingest.pipeline import EXPIRED_STORED_NOW
    from driftline.ingest.stored_now import KeyLog

    log = KeyLog(limit=5)
    log.add([("a", "m", "v"), ("b", "m", "v"), ("c", "m", "v")])
    assert not log.full and log.size == 3
    log.add([("d", "m", "v"), ("e", "m", "v"), ("f", "m", "v")])
    assert log.full and log.size == 5
    log.add([("g", "m", "v")])
    assert log.size == 5 and log.contains(("e", "m", "v")) and not log.contains(("f", "m", "v"))
    counts = Counter({EXPIRED_STORED_NOW: 2})
    assert expired_warning(counts, None, "90d", partial=True).startswith("at least 2 (counted among the first")
    assert expired_warning(counts, None, "90d").startswith("2 predictions stored by this replay")


def test_events_out_of_time_order_in_the_replay_itself_are_told_so(tmp_path, capsys) -> None:
    """Backlog helper's check: predictions replayed, then their outcomes from a second file, horizon 1d: the outcomes
    older than the last prediction - 1d are refused past_horizon, and the warning said 'replay it into a database of
    its own' (it was one). It now names the cause (out of time order within the replay) and the remedy (sorted by ts,
    one file)."""
    paths, _, _, _ = _files(tmp_path)
    config = tmp_path / "c.yaml"
    config.write_text("labels:\n  horizon: 1d\n")
    db = f"sqlite:///{tmp_path / 'files.db'}"
    assert main(["--config", str(config), "--db", db, "replay", str(paths["p"]), "--json"]) == 0
    capsys.readouterr()
    assert main(["--config", str(config), "--db", db, "replay", str(paths["o"]), "--json"]) == 0
    (warning,) = json.loads(capsys.readouterr().out)["warnings"]
    assert "dead-lettered past_horizon" in warning and "out of time order by more than the horizon" in warning
    assert "outcomes replayed from separate files one after the other" in warning
    unsorted = tmp_path / "unsorted.jsonl"  # one file: the predictions, then the outcomes
    unsorted.write_text(paths["p"].read_text() + paths["o"].read_text())
    db = f"sqlite:///{tmp_path / 'unsorted.db'}"
    assert main(["--config", str(config), "--db", db, "replay", str(unsorted), "--json", "--batch-size", "500"]) == 0
    (warning, *others) = json.loads(capsys.readouterr().out)["warnings"]
    assert "dead-lettered past_horizon" in warning and "out of time order by more than the horizon" in warning
    assert "sort them by ts into one file" in warning and "database of its own" not in warning
    assert not any("database of its own" in w for w in others)  # the expiry warning too (verification tryout)


def test_a_sorted_history_in_a_fresh_database_is_told_its_expiry_is_what_live_did(tmp_path, capsys) -> None:
    """New-user tryout: a complete, time-sorted 150-day churn history (outcomes for the churners only, 40 days on)
    replayed into a fresh database warned that its expired predictions should be replayed "into a database of its
    own (--db)", which it was. A live run expires them the same way: the count stays, the advice now says so."""
    day, t0 = 86400.0, 1_780_272_000.0  # 2026-06-01
    events = []
    for i in range(150):
        ts = t0 + i * day
        events.append({"type": "prediction", "prediction_id": f"c{i}", "model": "churn", "ts": ts, "score": 0.5})
        if i % 4 == 0:
            events.append({"type": "outcome", "prediction_id": f"c{i}", "label": 1, "ts": ts + 40 * day})
    events.sort(key=lambda e: e["ts"])
    newest = max(e["ts"] for e in events)
    # by hand: the predictions without an outcome made more than 90 days before the newest event
    expired = sum(1 for i in range(150) if i % 4 and t0 + i * day < newest - 90 * day)
    for batch in ("20000", "7"):  # in one batch or many: the same count, the same words
        db = f"sqlite:///{tmp_path / f'fresh{batch}.db'}"
        path = _lines(tmp_path, "history.jsonl", *events)
        assert main(["--db", db, "replay", path, "--json", "--batch-size", batch]) == 0
        out, err = capsys.readouterr()
        doc = json.loads(out)
        assert doc["expired_predictions"] == expired == 73  # days 0..97 (newest: day 188), less 25 churners
        (warning,) = doc["warnings"]
        assert warning.startswith(f"{expired} predictions stored by this replay were expired during it")
        assert ("This replay's events came in time order, so a live run would have done the same: these predictions "
                "got no outcome within the label horizon (`labels.horizon`, 90d; lengthen it if outcomes can come "
                "later). Nothing to redo.") in warning
        assert "database of its own" not in warning and "Nothing to redo" in " ".join(err.split())


def test_an_old_event_behind_a_newer_one_of_the_same_replay_is_told_to_sort_the_file(tmp_path, capsys) -> None:
    """The (NEW, OLD) replay of one batch: OLD came more than the horizon behind NEW, so its expiry is not what a
    live run did, and the advice is to sort the file (the backfill advice it once had named a database of its own,
    which it was); sorted (OLD, NEW) gets the live wording."""
    db = f"sqlite:///{tmp_path / 'unsorted.db'}"
    assert main(["--db", db, "replay", _lines(tmp_path, "u.jsonl", NEW, OLD), "--json"]) == 0
    (warning,) = json.loads(capsys.readouterr().out)["warnings"]
    # verification tryout: it said "To backfill history, replay it into a database of its own (--db), apart from
    # newer events" to a replay into a fresh database; the cause is the file's order, as past_horizon_warning says
    assert "This replay's own events came out of time order by more than the horizon" in warning
    assert "sort them by ts into one file and replay that into a fresh database" in warning
    assert "came in time order" not in warning and "database of its own" not in warning
    db = f"sqlite:///{tmp_path / 'sorted.db'}"
    assert main(["--db", db, "replay", _lines(tmp_path, "s.jsonl", OLD, NEW), "--json"]) == 0
    (warning,) = json.loads(capsys.readouterr().out)["warnings"]
    assert "This replay's events came in time order" in warning and "database of its own" not in warning
