"""`driftline models list|forget` (SRE tryout: junk model names from a producer bug held `limits.max_models` slots
for good, so a real new model's events were all dead-lettered `model_limit` with no way out short of editing the
database): forgetting a junk model frees its slot for running writers, in one transaction under the write lock,
deletes every per-model row (outcomes, alert history and dead letters are kept), and /metrics drops its series."""

from __future__ import annotations

import json
import threading

import msgspec
import pytest
from prometheus_client.core import Metric
from sqlalchemy import func, inspect, select, text

from driftline import cli
from driftline.config import Config, from_dict
from driftline.exporter.collector import SnapshotCollector
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage import forget as fg
from driftline.storage import schema as t
from driftline.storage.errors import WriteLocked
from driftline.storage.samples import compact_samples
from driftline.storage.store import Store

END = 1_795_996_800.0  # 2026-11-30T00:00:00Z
_enc = msgspec.json.Encoder()


def _pred(pid: str, model: str, ts: float = END - 3 * 86400, **kw: object) -> bytes:
    return _enc.encode({"type": "prediction", "prediction_id": pid, "model": model, "variant": "A",
                        "model_version": "v1", "ts": ts, "score": 0.7, **kw})


def _outcome(pid: str) -> bytes:
    return _enc.encode({"type": "outcome", "prediction_id": pid, "label": 1, "ts": END - 2 * 86400})


def _url(kind: str, tmp_path, request) -> str:
    return f"sqlite:///{tmp_path / 'm.db'}" if kind == "sqlite" else request.getfixturevalue("pg_url")


def _table_counts(url: str) -> dict[str, int]:
    """Rows per table (the whole database's state for the dry-run check)."""
    store = Store(url)
    try:
        with store.read() as conn:
            names = inspect(conn).get_table_names()
            return {n: conn.execute(text(f'SELECT COUNT(*) FROM "{n}"')).scalar_one() for n in sorted(names)}
    finally:
        store.close()


def _batch(pipe: Pipeline, raws: list[bytes], start: int):
    return pipe.process_batch([RawRecord("t", 0, start + i, r) for i, r in enumerate(raws)])


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _limited(tmp_path, capsys, max_models: int, models: list[str]) -> list[str]:
    """CLI options for a SQLite database under limits.max_models, with one prediction of each of `models` replayed
    (in order: the first ones take the slots)."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"limits:\n  max_models: {max_models}\n")
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'm.db'}"]
    (tmp_path / "e.jsonl").write_bytes(b"\n".join([_pred(f"p{i}", m) for i, m in enumerate(models)]) + b"\n")
    assert _cli(capsys, *base, "replay", str(tmp_path / "e.jsonl"))[0] == 0
    return base


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_forgetting_a_junk_model_frees_its_slot_for_the_real_one(tmp_path, request, capsys, kind):
    url = _url(kind, tmp_path, request)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("limits:\n  max_models: 2\n")
    base = ["--config", str(cfg), "--db", url]
    (tmp_path / "junk.jsonl").write_bytes(b"\n".join(
        [_pred(f"j{i}", m) for i, m in enumerate(["fraud-v2-test", "FRAUD"] * 3)]) + b"\n")
    (tmp_path / "real1.jsonl").write_bytes(b"\n".join([_pred(f"r{i}", "fraud") for i in range(4)]) + b"\n")
    (tmp_path / "real2.jsonl").write_bytes(b"\n".join([_pred(f"r{i}", "fraud") for i in range(4, 9)]) + b"\n")
    assert _cli(capsys, *base, "replay", str(tmp_path / "junk.jsonl"))[0] == 0
    assert _cli(capsys, *base, "replay", str(tmp_path / "real1.jsonl"), "--json")[0] == 0
    code, out, _ = _cli(capsys, *base, "models", "list", "--json")
    doc = json.loads(out)
    assert code == 0 and [m["model"] for m in doc["models"]] == ["FRAUD", "fraud-v2-test"]
    assert (doc["slots_used"], doc["max_models"]) == (2, 2)
    assert doc["model_limit_dead_letters"] == 4 and doc["refused_models"] == {"fraud": 4}
    assert doc["models"][0]["predictions"] == 3 and doc["models"][0]["variants"] == ["A"]
    code, out, _ = _cli(capsys, *base, "models", "list")
    assert code == 0 and "2 of 2 used" in out and "'fraud' (4)" in out

    before = _table_counts(url)  # the dry run changes nothing and says what --yes would delete
    code, out, _ = _cli(capsys, *base, "models", "forget", "FRAUD")
    assert code == 1 and "would delete" in out and "--yes" in out
    assert _table_counts(url) == before
    code, out, _ = _cli(capsys, *base, "models", "forget", "FRAUD", "--json")
    assert code == 1 and json.loads(out)["rows"]["predictions"] == 3 and json.loads(out)["deleted"] is False
    assert _table_counts(url) == before

    code, _, err = _cli(capsys, *base, "models", "forget", "fraud-v2")
    assert code == 2 and "did you mean" in err and "fraud-v2" in err
    assert _table_counts(url) == before

    code, out, _ = _cli(capsys, *base, "models", "forget", "FRAUD", "--yes", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["deleted"] and doc["rows"]["admitted_labels"] == 3 and doc["slots_used"] == 1
    assert _cli(capsys, *base, "replay", str(tmp_path / "real2.jsonl"))[0] == 0
    doc = json.loads(_cli(capsys, *base, "models", "list", "--json")[1])
    assert {m["model"]: m["predictions"] for m in doc["models"]} == {"fraud": 5, "fraud-v2-test": 3}
    assert doc["model_limit_dead_letters"] == 4  # the earlier refusals stay counted


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_running_writer_sees_the_freed_slot_at_its_next_batch(tmp_path, request, kind):
    url = _url(kind, tmp_path, request)
    store = Store(url, clock=lambda: END)
    store.migrate()
    pipe = Pipeline(from_dict({"limits": {"max_models": 2}}), store, clock=lambda: END)  # one long-lived writer
    _batch(pipe, [_pred("a0", "a"), _pred("b0", "b")], 0)
    assert _batch(pipe, [_pred("r0", "real")], 10).dead == 1
    other = Store(url)  # the command's own connection, as another process
    assert fg.forget(other, "a").rows["admitted_labels"] == 3
    other.close()
    res = _batch(pipe, [_pred("r1", "real"), _pred("a1", "a")], 20)  # the freed slot goes to the first new model
    assert (res.accepted, res.dead) == (1, 1)
    assert "model 'a' is new" in store.dead_letters(reason="model_limit")[0]["detail"]  # a is a new model now
    assert sorted(store.models()) == ["b", "real"]
    fg.forget(store, "b")
    assert _batch(pipe, [_pred("a2", "a", ts=END - 86400)], 30).accepted == 1  # admitted again, history anew
    assert [r.bucket_start for r in store.buckets("a", 0, END)] == [END - 86400]
    store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_forget_waits_for_the_write_lock_and_deletes_nothing_without_it(tmp_path, request, kind):
    url = _url(kind, tmp_path, request)
    store = Store(url, clock=lambda: END)
    store.migrate()
    _batch(Pipeline(Config(), store, clock=lambda: END), [_pred("a0", "a")], 0)
    short = Store(url, lock_timeout_s=0.2)
    with store.write():  # a batch or maintenance pass in progress
        with pytest.raises(WriteLocked):
            fg.forget(short, "a")
    assert fg.preview(short, "a").rows["buckets"] == 1
    short.close()
    store.close()


def _seed_every_table(store: Store, model: str) -> None:
    """Rows of `model` in every per-model table (references, samples, triggers, reports, overflow counters)."""
    from driftline.readouts.references import reference_profiles, reference_seasons
    from driftline.reports.table import reports
    from driftline.storage.samples import reference_samples
    from driftline.triggers.tables import alert_history, trigger_states

    with store.write() as conn:
        ref = conn.execute(reference_profiles.insert().values(
            model=model, created_at=END, source="window", n=1, profile="{}", active=True)).inserted_primary_key[0]
        conn.execute(reference_seasons.insert().values(ref_id=ref, seasonality="hour_of_day", seasons="{}"))
        conn.execute(reference_samples.insert().values(reference_id=ref, data=b"x"))
        conn.execute(trigger_states.insert().values(model=model, trigger="t", state="ok", since=END, updated_at=END,
                                                    window="7d"))
        conn.execute(alert_history.insert().values(
            at=END, model=model, trigger="t", severity="page", metric="recall", from_state="ok", to_state="firing",
            threshold=0.5, window="7d", notified=True))
        conn.execute(reports.insert().values(model=model, week="2026-W48", window_start=END, window_end=END,
                                             generated_at=END, provisional=False, source="x", doc="{}", html="",
                                             markdown=""))
        conn.execute(t.counters.insert().values(name="label_overflow_variant", label=model, value=3))


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_every_row_of_the_model_goes_and_only_its_rows(tmp_path, request, kind):
    url = _url(kind, tmp_path, request)
    store = Store(url, clock=lambda: END)
    store.migrate()
    pipe = Pipeline(Config(), store, clock=lambda: END)
    feats = {"features": {"amount": 12.5, "country": "DE"}}  # the bucket_features rows too
    _batch(pipe, [_pred("x0", "junk", **feats), _pred("y0", "keep", **feats), _outcome("x0"), _outcome("y0")], 0)
    for model in ("junk", "keep"):
        _seed_every_table(store, model)
    keep_before = fg.preview(store, "keep")
    done = fg.forget(store, "junk")
    assert all(n >= 1 for n in done.rows.values()), done.rows  # the seed reached every table forgetting clears
    assert done.outcomes_kept == 1
    assert fg.preview(store, "junk").total == 0
    assert fg.preview(store, "keep") == keep_before
    with store.read() as conn:  # kept: outcomes (by prediction id), alert history, dead letters
        assert conn.execute(select(func.count()).select_from(t.outcomes)).scalar_one() == 2
        assert conn.execute(text("SELECT COUNT(*) FROM alert_history WHERE model = 'junk'")).scalar_one() == 1
    store.close()


def test_every_table_with_a_model_column_is_deleted_or_kept_on_purpose(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    store.migrate()
    with store.read() as conn:
        insp = inspect(conn)
        with_model = {n for n in insp.get_table_names() if "model" in {c["name"] for c in insp.get_columns(n)}}
    deleted = {name for name, _, _ in fg._wheres("m")}
    assert with_model <= deleted | set(fg.KEPT), with_model - deleted - set(fg.KEPT)
    store.close()


def _models_in(metrics: list[Metric]) -> set[str]:
    return {s.labels["model"] for fam in metrics for s in fam.samples if "model" in s.labels}


def test_metrics_drop_the_forgotten_model_at_the_next_snapshot(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'x.db'}", clock=lambda: END)
    store.migrate()
    config = from_dict({"limits": {"max_variants_per_model": 1}})
    _batch(Pipeline(config, store, clock=lambda: END), [_pred("a0", "a"), _pred("a1", "a", variant="B"),
                                                       _pred("k0", "keep")], 0)
    now = [0.0]
    col = SnapshotCollector(store, config, clock=lambda: END, monotonic=lambda: now[0])
    assert {"a", "keep"} <= _models_in(list(col.collect()))  # windowed series and the overflow counter of a
    fg.forget(store, "a")
    now[0] += col.cache_s
    assert "a" not in _models_in(list(col.collect()))
    assert "keep" in _models_in(list(col.collect()))
    store.close()


def test_sample_compaction_does_not_bring_back_a_model_forgotten_meanwhile(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'c.db'}", clock=lambda: END)
    store.migrate()
    _batch(Pipeline(Config(), store, clock=lambda: END), [_pred("a0", "a")], 0)
    real_write = store.write
    hooked = threading.Event()

    def write():  # the first write of the compaction runs after the model was forgotten
        if not hooked.is_set():
            hooked.set()
            fg.forget(store, "a")
        return real_write()

    store.write = write  # type: ignore[method-assign]
    assert compact_samples(store, END, k=64) == 1
    assert fg.preview(store, "a").rows["feature_samples"] == 0
    store.close()


def test_the_config_model_needs_force_and_the_dry_run_says_so(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'f.db'}"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model: fraud\n")
    (tmp_path / "e.jsonl").write_bytes(_pred("f0", "fraud") + b"\n")
    base = ["--config", str(cfg), "--db", url]
    assert _cli(capsys, *base, "replay", str(tmp_path / "e.jsonl"))[0] == 0
    before = _table_counts(url)
    code, out, _ = _cli(capsys, *base, "models", "forget", "fraud")
    assert code == 1 and "also needs --force" in out
    code, _, err = _cli(capsys, *base, "models", "forget", "fraud", "--yes")
    assert code == 2 and "--force" in err and "nothing changed" in err
    assert _table_counts(url) == before
    assert _cli(capsys, *base, "models", "forget", "fraud", "--yes", "--force")[0] == 0
    assert json.loads(_cli(capsys, *base, "models", "list", "--json")[1])["models"] == []


def test_forgetting_a_refused_model_says_it_was_refused_not_misspelled(tmp_path, capsys):
    """Tryout: `models forget junk4` for a name `models list` shows under new models refused said "no model 'junk4'
    is stored … did you mean 'Junk2'?" as if it were a typo; it was refused by limits.max_models, never stored."""
    base = _limited(tmp_path, capsys, 2, ["Junk1", "Junk2", "junk4", "junk4"])
    before = _table_counts(base[3])
    code, _, err = _cli(capsys, *base, "models", "forget", "junk4", "--yes")
    err = " ".join(err.split())
    assert code == 2 and "model 'junk4' was refused by limits.max_models (2)" in err, err
    assert "nothing to forget" in err and "did you mean" not in err
    assert _table_counts(base[3]) == before
    code, _, err = _cli(capsys, *base, "models", "forget", "junk5")  # a name never seen is still a typo
    assert code == 2 and "no model 'junk5' is stored" in err and "did you mean" in err


def test_models_are_listed_case_insensitively(tmp_path, capsys):
    """Tryout: `models list` put `Junk2` before `churn` (a case-sensitive sort)."""
    base = ["--db", f"sqlite:///{tmp_path / 'm.db'}"]
    (tmp_path / "e.jsonl").write_bytes(b"\n".join(
        [_pred(f"p{i}", m) for i, m in enumerate(["churn", "Junk2", "alpha", "Beta"])]) + b"\n")
    assert _cli(capsys, *base, "replay", str(tmp_path / "e.jsonl"))[0] == 0
    doc = json.loads(_cli(capsys, *base, "models", "list", "--json")[1])
    assert [m["model"] for m in doc["models"]] == ["alpha", "Beta", "churn", "Junk2"]
    code, _, err = _cli(capsys, *base, "models", "forget", "nosuch")
    assert code == 2 and "'alpha', 'Beta', 'churn', 'Junk2'" in " ".join(err.split()), err


def test_refused_events_of_a_model_admitted_since_can_be_fed_again(tmp_path, capsys):
    """SRE tryout: after `models forget` freed a slot, the new model's events refused before (model_limit dead
    letters) stayed missing with no way to ingest them. `dead-letters --reason R --model M --raw` prints their
    stored payloads, oldest first, for `replay -`; a payload stored cut (an event over the stored size) is left out
    and counted, never fed as a broken line."""
    from driftline.core.events import RAW_LIMIT

    url = f"sqlite:///{tmp_path / 'm.db'}"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("limits:\n  max_models: 1\n")
    base = ["--config", str(cfg), "--db", url]
    big = _pred("r-big", "fraud", note="x" * RAW_LIMIT)
    lines = [_pred("j0", "junk"), _pred("r0", "fraud"), _pred("o0", "other"), _pred("r1", "fraud"), big]
    (tmp_path / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    assert _cli(capsys, *base, "replay", str(tmp_path / "a.jsonl"))[0] == 0
    assert _cli(capsys, *base, "models", "forget", "junk", "--yes")[0] == 0
    code, _, err = _cli(capsys, *base, "dead-letters", "--raw")
    assert code == 2 and "--reason" in err
    code, _, err = _cli(capsys, *base, "dead-letters", "--model", "fraud")
    assert code == 2 and "--raw" in err
    code, out, err = _cli(capsys, *base, "dead-letters", "--reason", "model_limit", "--model", "fraud", "--raw")
    assert code == 0 and out.encode().splitlines() == [_pred("r0", "fraud"), _pred("r1", "fraud")]
    err = " ".join(err.split())
    assert "2 payloads of reason model_limit written" in err and "1 of another model" in err
    assert "1 left out: stored cut" in err
    (tmp_path / "again.jsonl").write_text(out)
    assert _cli(capsys, *base, "replay", str(tmp_path / "again.jsonl"))[0] == 0
    doc = json.loads(_cli(capsys, *base, "models", "list", "--json")[1])
    assert {m["model"]: m["predictions"] for m in doc["models"]} == {"fraud": 2}
    code, out, _ = _cli(capsys, *base, "models", "list")  # fed again: no hint to feed them again (test_refeed_hint)
    out = " ".join(out.split())
    assert "nothing left to feed again: 'fraud' (2 refused events stored since, 1 stored cut or unreadable" in out, out
    assert "driftline replay -" not in out


def test_a_name_matching_several_stored_ones_in_case_offers_them_all(tmp_path, capsys):
    """Verification tryout: `models forget Fraud` offered "did you mean 'FRAUD'?" although the config's own model
    'fraud' differs only in case too; every stored name that matches case-insensitively is offered."""
    from driftline.commands.which_model import did_you_mean

    cfg = tmp_path / "c.yaml"
    cfg.write_text("model: fraud\n")
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'm.db'}"]
    (tmp_path / "e.jsonl").write_bytes(b"\n".join([_pred("p1", "fraud"), _pred("p2", "FRAUD")]) + b"\n")
    assert _cli(capsys, *base, "replay", str(tmp_path / "e.jsonl"))[0] == 0
    code, _, err = _cli(capsys, *base, "models", "forget", "Fraud")
    err = " ".join(err.split())
    assert code == 2 and "stored models: 'FRAUD', 'fraud'; did you mean 'FRAUD' or 'fraud'?)" in err, err
    assert did_you_mean("frud", ["FRAUD", "fraud", "churn"]) == "; did you mean 'FRAUD' or 'fraud'?"
    assert did_you_mean("Fraud", ["a", "FRAUD", "fraud", "frAUD"]) == "; did you mean 'FRAUD', 'fraud' or 'frAUD'?"
    assert did_you_mean("chrun", ["churn", "fraud"]) == "; did you mean 'churn'?"
    assert did_you_mean("zzz", ["churn"]) == ""
    code, _, err = _cli(capsys, *base, "metrics", "--model", "Fraud")  # its listing: not "1 predictions"
    err = " ".join(err.split())
    assert code == 2 and "'fraud' (1 prediction, newest bucket" in err and "did you mean 'FRAUD' or 'fraud'?" in err


def test_models_list_advises_freeing_a_slot_only_when_none_is_free(tmp_path, capsys, monkeypatch):
    """Verification tryout: after a forget left 2 of 3 slots used, `models list` still advised "Free a slot held by
    a junk name…". With a slot free it says so, and the refused model is indeed admitted at its next event."""
    monkeypatch.setenv("COLUMNS", "200")
    base = _limited(tmp_path, capsys, 3, ["a", "b", "junk3", "new4"])
    out = " ".join(_cli(capsys, *base, "models", "list")[1].split())
    assert "1 model_limit dead letter," in out and "Free a slot held by a junk name" in out, out
    assert _cli(capsys, *base, "models", "forget", "junk3", "--yes")[0] == 0
    out = " ".join(_cli(capsys, *base, "models", "list")[1].split())
    assert "Free a slot" not in out, out
    assert "1 slot is free: a refused model is admitted at its next event" in out, out
    assert json.loads(_cli(capsys, *base, "models", "list", "--json")[1])["slots_free"] == 1
    (tmp_path / "n.jsonl").write_bytes(_pred("p9", "new4") + b"\n")
    assert _cli(capsys, *base, "replay", str(tmp_path / "n.jsonl"))[0] == 0
    doc = json.loads(_cli(capsys, *base, "models", "list", "--json")[1])
    assert "new4" in {m["model"] for m in doc["models"] if m["admitted"]} and doc["slots_free"] == 0


def test_a_raw_export_for_a_mistyped_model_names_the_models_it_holds(tmp_path, capsys):
    """Final tryout: `dead-letters --raw --model` with a mistyped name printed nothing and exited 0 with only "0
    payloads … N of another model left out": a typo piped nothing into replay, silently."""
    base = _limited(tmp_path, capsys, 1, ["junk", "Fraud", "Fraud", "other"])
    code, out, err = _cli(capsys, *base, "dead-letters", "--reason", "model_limit", "--model", "fraud", "--raw")
    err = " ".join(err.split())
    assert code == 0 and out == ""
    assert "none is of model 'fraud' (did you mean 'Fraud'?)" in err and "'Fraud' (2)" in err and "'other' (1)" in err


def test_raw_payloads_honour_limit_and_refuse_json(tmp_path, capsys):
    """Hostile-user tryout: `dead-letters --raw` ignored `--limit` and `--json` silently. --limit N writes the oldest
    N payloads and counts the rest on stderr; --json with --raw exits 2 naming --json."""
    base = _limited(tmp_path, capsys, 1, ["junk", "fraud", "fraud", "fraud"])
    code, out, err = _cli(capsys, *base, "dead-letters", "--reason", "model_limit", "--model", "fraud", "--raw",
                          "--limit", "2")
    err = " ".join(err.split())
    assert code == 0 and out.encode().splitlines() == [_pred("p1", "fraud"), _pred("p2", "fraud")]
    assert "2 payloads of reason model_limit written" in err and "1 more left out by --limit 2" in err, err
    code, out, _ = _cli(capsys, *base, "dead-letters", "--reason", "model_limit", "--raw")
    assert code == 0 and len(out.splitlines()) == 3  # without --limit: all of them, not the listing's 20
    code, out, err = _cli(capsys, *base, "dead-letters", "--reason", "model_limit", "--raw", "--json")
    assert code == 2 and out == "" and "--json: not with --raw" in err, err
