"""Label cardinality (issue 13, part 3): junk models, variants and model versions from events cannot grow /metrics
past the documented bound; reserved label values (`all`, `__other__`) cannot collide with the whole-model or
overflow series; overflow is counted and visible in /metrics and `driftline metrics --json`; the admitted set
lives in the database (shared by every writer, kept over restarts)."""

from __future__ import annotations

from collections import Counter

import json
import logging
import urllib.request
from pathlib import Path

import msgspec
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from driftline import cli
from driftline.config import ConfigError, from_dict, load
from driftline.durations import parse_duration
from driftline.exporter import bounds
from driftline.exporter.bounds import PIPELINE_SERIES, PROCESS_SERIES, series_bound
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.ingest.replay import replay
from driftline.ingest.simulate import SimSpec, stream
from driftline.service.process import Service
from driftline.storage.store import Store
from driftline.triggers.model import STATES

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "driftline.example.yaml"
END = 1_795_996_800.0  # 2026-11-30T00:00:00Z
_enc = msgspec.json.Encoder()

PER_MODEL_WINDOW = 2 + 4 * 3 + 2 + 5 + 2
"""Per (model, window): score PSI, seasonal fallback count, 4 label-free estimates with 2 bounds, trusted,
contradicted, 5 multivariate drift series (second tryout: the last 19 were not counted), and one
driftline_readout_unavailable per readout (estimated, multivariate)."""
MATURED_COUNTS = 6
"""The matured part's counts (driftline_window_matured_*, driftline_window_awaiting_implicit): exported under the
implicit-negative policy only, while a window reaches into the maturity period."""
PER_GROUP = 8 * 3 + 5 + MATURED_COUNTS + 5 + 6 + 3
"""Windowed series of one (variant, model_version) group: 8 rates with 2 bounds, 5 counts, the matured part's 6,
5 scores, ROC AUC's and AP's interval bounds and error bounds, 2 delay quantiles and their _count (README, Prometheus exporter, Label
cardinality)."""


def _pred(i: int, model: str = "fraud", variant: str = "A", version: str = "v1") -> bytes:
    return _enc.encode({"type": "prediction", "prediction_id": f"j-{model}-{variant}-{version}-{i}",
                        "model": model, "variant": variant, "model_version": version,
                        "ts": END - 3600 - (i % 50) * 60, "score": (i % 97) / 97})


def _junk_file(path: Path) -> Path:
    """Ten days of clean simulated traffic, then 10,000 junk variants, 10,000 junk versions and 300 junk model
    names (600 events)."""
    spec = SimSpec(start=END - 10 * 86400, days=10, per_day=300, drift_day=5, seed=3)
    lines = [_enc.encode(e) for e in stream(spec, end=END)]
    lines += [_pred(i, variant=f"junk-{i}") for i in range(10_000)]
    lines += [_pred(i, version=f"build-{i}") for i in range(10_000)]
    lines += [_pred(i, model=f"m-{i % 300}") for i in range(600)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _series(text: str) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    return [(s.name, tuple(sorted(s.labels.items()))) for fam in text_string_to_metric_families(text)
            for s in fam.samples]


def _scrape(config, store) -> str:
    svc = Service(config, store, clock=lambda: END, port=0, evaluate=False)
    svc.start()
    try:
        with urllib.request.urlopen(svc.url + "/metrics", timeout=60) as r:
            return r.read().decode()
    finally:
        svc.stop()


def documented_bound(config) -> int:
    """README's formula: W·M·(49·(1 + (V+1)(R+1)) + 23 + 3F) + T·(4 + |states|) + 3M + 1 + pipeline + process."""
    lim = config.limits
    m, v, r = lim.max_models, lim.max_variants_per_model, lim.max_versions_per_model
    f = max(config.max_features, len(config.features))
    windows = len({config.window_s, *(parse_duration(t.window) for t in config.triggers)})
    return (windows * m * (PER_GROUP * (1 + (v + 1) * (r + 1)) + PER_MODEL_WINDOW + 3 * f)
            + len(config.triggers) * (4 + len(STATES)) + 3 * m + 1 + PIPELINE_SERIES + PROCESS_SERIES)


@pytest.fixture(scope="module")
def junk_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("card")
    config = load(EXAMPLE)
    store = Store(f"sqlite:///{tmp / 'c.db'}", clock=lambda: END)
    store.migrate()
    result = replay(Pipeline(config, store, clock=lambda: END), str(_junk_file(tmp / "junk.jsonl")))
    yield tmp / "c.db", config, store, result
    store.close()


def test_junk_models_variants_and_versions_stay_within_the_documented_bound(junk_db):
    path, config, store, _ = junk_db
    series = _series(_scrape(config, store))
    # the bound's series per group is what a group with every metric defined exports, exactly (it once lagged
    # behind the series added later: the error bounds, then the ranking intervals)
    groups = Counter((lbl["model"], lbl["variant"], lbl["model_version"], lbl["window"])
                     for lbl in (dict(labels) for _, labels in series)
                     if {"model", "variant", "model_version", "window"} <= lbl.keys())
    assert max(groups.values()) == PER_GROUP - MATURED_COUNTS and PER_GROUP == bounds.PER_GROUP  # explicit policy
    assert len(series) == len(set(series))  # no duplicate series (a variant named `all` used to make some)
    assert len(series) <= documented_bound(config) == series_bound(config)
    variants = {dict(lbl)["variant"] for name, lbl in series if name == "driftline_window_predictions"}
    versions = {dict(lbl)["model_version"] for name, lbl in series if name == "driftline_window_predictions"}
    models = {dict(lbl)["model"] for name, lbl in series if name == "driftline_window_predictions"}
    lim = config.limits
    assert "__other__" in variants and len(variants - {"all"}) <= lim.max_variants_per_model + 1
    assert "__other__" in versions and len(versions - {"all"}) <= lim.max_versions_per_model + 1
    assert len(models) <= lim.max_models and "fraud" in models


def test_overflow_is_counted_and_visible_in_metrics_and_metrics_json(junk_db, capsys):
    path, config, store, result = junk_db
    s = {(n, lbl): v for fam in text_string_to_metric_families(_scrape(config, store)) for n, lbl, v in
         ((x.name, tuple(sorted(x.labels.items())), x.value) for x in fam.samples)}
    lim = config.limits
    # the clean stream admitted A/B and v1/v2; junk fills the remaining slots, the rest folds
    folded_variants = 10_000 - (lim.max_variants_per_model - 2)
    folded_versions = 10_000 - (lim.max_versions_per_model - 2)
    key = lambda kind, model="fraud": ("driftline_label_overflow_total", (("kind", kind), ("model", model)))  # noqa
    assert s[key("variant")] == folded_variants
    assert s[key("model_version")] == folded_versions
    rejected_models = 600 - 600 // 300 * (lim.max_models - 1)
    assert s[key("model", "__other__")] == rejected_models
    assert s[("driftline_dead_letters_total", (("reason", "model_limit"),))] == rejected_models
    assert result.dead == rejected_models
    assert cli.main(["--config", str(EXAMPLE), "--db", f"sqlite:///{path}", "metrics", "--json", "--at",
                     repr(END)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["label_overflow"] == {"variant": folded_variants, "model_version": folded_versions}
    other = [g for g in doc["by_variant"] if g["variant"] == "__other__"]
    assert sum(g["counts"]["predictions"] for g in other) == folded_variants


def test_reserved_values_are_dead_lettered_never_merged_into_whole_model_series(tmp_path):
    config = load(EXAMPLE)
    store = Store(f"sqlite:///{tmp_path / 'r.db'}", clock=lambda: END)
    store.migrate()
    raws = [_pred(1), _pred(2, variant="all"), _pred(3, version="all"), _pred(4, variant="__other__"),
            _pred(5, version="__other__"), _pred(6, model="__other__"), _pred(7, model="all"),
            _pred(8, variant=" all"), _pred(9, variant="ALL"), _pred(10, version="All ")]  # read as `all`
    res = Pipeline(config, store, clock=lambda: END).process_batch(
        [RawRecord("t", 0, i, r) for i, r in enumerate(raws)])
    assert (res.accepted, res.dead) == (1, 9)
    letters = store.dead_letters(reason="reserved_label")
    assert len(letters) == 7 and all("reserved" in d["detail"] for d in letters)
    padded = store.dead_letters(reason="wrong_type")  # surrounding whitespace is refused at decode, before the gate
    assert len(padded) == 2 and all("leading or trailing whitespace" in d["detail"] for d in padded)
    series = _series(_scrape(config, store))
    assert len(series) == len(set(series))
    whole = [dict(lbl) for name, lbl in series if name == "driftline_window_predictions"]
    assert {(w["variant"], w["model_version"]) for w in whole} == {("all", "all"), ("A", "v1")}


def test_admitted_set_is_shared_by_writers_and_survives_restarts(tmp_path):
    config = from_dict({"limits": {"max_variants_per_model": 2}})
    url = f"sqlite:///{tmp_path / 's.db'}"
    first = Store(url, clock=lambda: END)
    first.migrate()
    Pipeline(config, first, clock=lambda: END).process_batch(
        [RawRecord("t", 0, i, _pred(i, variant=v)) for i, v in enumerate(["A", "B"])])
    first.close()
    second = Store(url, clock=lambda: END)  # a restart, or another writer
    res = Pipeline(config, second, clock=lambda: END).process_batch(
        [RawRecord("t", 0, 10 + i, _pred(10 + i, variant=v)) for i, v in enumerate(["C", "A", "B", "D"])])
    assert res.accepted == 4
    variants = {r.variant for r in second.buckets("fraud", 0, END + 86400)}
    assert variants == {"A", "B", "__other__"}
    assert second.counters()[("label_overflow_variant", "fraud")] == 2
    second.close()


def test_admitted_set_on_postgresql(pg_url):
    config = from_dict({"limits": {"max_models": 1, "max_versions_per_model": 1}})
    store = Store(pg_url, clock=lambda: END)
    store.migrate()
    pipe = Pipeline(config, store, clock=lambda: END)
    pipe.process_batch([RawRecord("t", 0, 0, _pred(0, version="v1")), RawRecord("t", 0, 1, _pred(1, version="v2"))])
    res = pipe.process_batch([RawRecord("t", 0, 2, _pred(2, model="other")), RawRecord("t", 0, 3, _pred(3))])
    assert (res.accepted, res.dead) == (1, 1)
    assert store.dead_letters(reason="model_limit")[0]["detail"].startswith("model 'other'")
    assert {(r.model_version) for r in store.buckets("fraud", 0, END + 86400)} == {"v1", "__other__"}
    assert store.admitted_labels_list() == [("fraud", "model", ""), ("fraud", "model_version", "v1"),
                                            ("fraud", "variant", "A")]
    store.close()


def test_allow_lists_admit_exactly_the_listed_values(tmp_path):
    config = from_dict({"limits": {"models": ["fraud"], "variants": {"fraud": ["A", "B"]},
                                   "versions": {"fraud": ["v1"]}}})
    store = Store(f"sqlite:///{tmp_path / 'a.db'}", clock=lambda: END)
    store.migrate()
    raws = [_pred(0), _pred(1, variant="B", version="v9"), _pred(2, variant="Z"), _pred(3, model="spam")]
    res = Pipeline(config, store, clock=lambda: END).process_batch(
        [RawRecord("t", 0, i, r) for i, r in enumerate(raws)])
    assert (res.accepted, res.dead) == (3, 1)
    assert store.dead_letters()[0]["reason"] == "model_limit"
    keys = {(r.variant, r.model_version) for r in store.buckets("fraud", 0, END + 86400)}
    assert keys == {("A", "v1"), ("B", "__other__"), ("__other__", "v1")}
    store.close()


def test_overflow_is_logged_once_per_model_and_kind_not_per_event(tmp_path, caplog):
    config = from_dict({"limits": {"max_variants_per_model": 1}})
    store = Store(f"sqlite:///{tmp_path / 'l.db'}", clock=lambda: END)
    store.migrate()
    pipe = Pipeline(config, store, clock=lambda: END)
    with caplog.at_level(logging.WARNING, logger="driftline"):
        for batch in range(3):
            pipe.process_batch([RawRecord("t", 0, batch * 100 + i, _pred(i, variant=f"x{batch}-{i}"))
                                for i in range(50)])
    lines = [r.getMessage() for r in caplog.records if "__other__" in r.getMessage()]
    assert len(lines) == 1 and "max_variants_per_model" in lines[0] and "fraud" in lines[0]
    store.close()


@pytest.mark.parametrize("limits, field", [
    ({"max_models": 0}, "limits.max_models"),
    ({"max_variants_per_model": -1}, "limits.max_variants_per_model"),
    ({"variants": {"fraud": ["all"]}}, "limits.variants"),
    ({"models": ["__other__"]}, "limits.models"),
])
def test_bad_limits_fail_at_start_naming_the_field(limits, field):
    with pytest.raises(ConfigError, match=f"`{field}"):
        from_dict({"limits": limits})


def test_example_config_loads_with_its_limits():
    data = yaml.safe_load(EXAMPLE.read_text())
    assert from_dict(data).limits.max_models >= 1


def test_upgrade_admits_the_values_already_stored(tmp_path):
    """Migration 0006_labels seeds the admitted set from the stored buckets, so an upgrade hides no series."""
    from alembic import command
    from alembic.config import Config as AlembicConfig
    from importlib.resources import files
    from sqlalchemy import create_engine, text

    url = f"sqlite:///{tmp_path / 'old.db'}"
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(files("driftline.storage") / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url)
    for rev in ("0002", "0003", "0004", "0005"):
        command.upgrade(cfg, rev)
    engine = create_engine(url)
    with engine.begin() as conn:
        for i, (model, variant, version) in enumerate([("fraud", "A", "v1"), ("fraud", "B", "v2"),
                                                       ("churn", "default", "unknown")]):
            conn.execute(text("INSERT INTO buckets VALUES (:m, :v, :a, :s, 0, x'')"),
                         {"m": model, "v": version, "a": variant, "s": 3600 * i})
    engine.dispose()
    store = Store(url)
    store.migrate()
    assert store.admitted_labels_list() == [
        ("churn", "model", ""), ("churn", "model_version", "unknown"), ("churn", "variant", "default"),
        ("fraud", "model", ""), ("fraud", "model_version", "v1"), ("fraud", "model_version", "v2"),
        ("fraud", "variant", "A"), ("fraud", "variant", "B")]
    store.close()


def test_replay_reports_every_folded_event_of_the_run_not_only_the_first_logged_batch(tmp_path, capsys):
    """Tryout: the rate-limited warning said '977 events … folded' (the first batch) while 9,996 were folded;
    the replay summary counts every folded event of the run, equal to the stored totals."""
    junk = _junk_file(tmp_path / "junk.jsonl")
    db = f"sqlite:///{tmp_path / 'r.db'}"
    base = ["--config", str(EXAMPLE), "--db", db]
    assert cli.main([*base, "replay", str(junk), "--batch-size", "1000", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert cli.main([*base, "metrics", "--json", "--at", repr(END)]) == 0
    over = json.loads(capsys.readouterr().out)["label_overflow"]
    assert doc["folded_into_other"] == over["variant"] + over["model_version"] > 1000
    assert cli.main([*base, "replay", str(junk)]) == 0  # everything already stored: nothing folded this time
    out = capsys.readouterr().out
    assert "folded into other" in out and "under __other__" not in out


def test_replay_counts_an_event_folded_on_variant_and_version_once(tmp_path, capsys):
    """An event with both a new variant and a new version beyond the limits was counted twice in the replay
    summary's `folded_into_other` (once per kind); it counts events once, the stored totals stay per kind."""
    both, variant_only, version_only, kept = 300, 40, 25, 7
    lines = [_pred(i, variant=f"junk-{i}", version=f"build-{i}") for i in range(both)]
    lines += [_pred(i, variant=f"solo-{i}") for i in range(variant_only)]
    lines += [_pred(i, version=f"lone-{i}") for i in range(version_only)]
    lines += [_pred(i) for i in range(kept)]  # variant A, version v1: both allowed
    path = tmp_path / "both.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"limits": {"variants": {"fraud": ["A"]}, "versions": {"fraud": ["v1"]}}}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'b.db'}"]
    assert cli.main([*base, "replay", str(path), "--batch-size", "97", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["accepted"] == both + variant_only + version_only + kept
    assert doc["folded_into_other"] == both + variant_only + version_only
    assert cli.main([*base, "metrics", "--json", "--at", repr(END)]) == 0
    over = json.loads(capsys.readouterr().out)["label_overflow"]
    assert (over["variant"], over["model_version"]) == (both + variant_only, both + version_only)


def test_configured_arms_keep_their_variant_slots_against_junk() -> None:
    """Second tryout: with ab.arms ctl/exp1/exp2 and 5 variant slots, junk variants that came first took the free
    slots and an arm arriving later would have been folded into __other__; the arms' slots are now kept."""
    from driftline.core.labels import OVERFLOW, Admitted, LabelGate, LabelLimits

    gate = LabelGate(LabelLimits(max_variants=4, reserved={"churn": frozenset({"ctl", "exp1", "exp2"})}), Admitted())
    got = [gate.decide("churn", v, "v1")[0] for v in ("junk1", "junk2", "ctl", "exp1", "junk3", "exp2", "junk4")]
    assert got == ["junk1", OVERFLOW, "ctl", "exp1", OVERFLOW, "exp2", OVERFLOW]
    assert len(gate.admitted.values[("churn", "variant")]) == 4  # the documented bound holds
    other = LabelGate(LabelLimits(max_variants=2, reserved={"m": frozenset({"a", "b", "c"})}), Admitted())
    assert [other.decide("m", v, "v")[0] for v in ("x", "a", "b", "c")] == [OVERFLOW, "a", "b", OVERFLOW]


def test_the_configured_model_keeps_its_slot_against_junk_models(tmp_path, capsys) -> None:
    """User tryout: with `model: fraud` and max_models 2, two junk models arriving first took both slots and every
    fraud prediction was dead-lettered (model_limit); the named model's slot is now kept, like ab.arms' variants.
    Without a config file naming a model, no slot is kept (the built-in default model is not the user's)."""
    lines = [{"type": "prediction", "prediction_id": str(i), "model": m, "ts": "2026-11-25T10:00:00Z", "score": 0.4}
             for i, m in enumerate(["junk1", "junk2", "fraud", "junk3", "fraud"])]
    (tmp_path / "e.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (tmp_path / "c.yaml").write_text("model: fraud\nlimits:\n  max_models: 2\n")
    named = ["--config", str(tmp_path / "c.yaml"), "--db", f"sqlite:///{tmp_path / 'a.db'}"]
    assert cli.main([*named, "replay", str(tmp_path / "e.jsonl")]) == 0
    store = Store(f"sqlite:///{tmp_path / 'a.db'}")
    refused = store.dead_letters(reason="model_limit")
    assert sorted(json.loads(d["raw"])["model"] for d in refused) == ["junk2", "junk3"]
    detail = {json.loads(d["raw"])["model"]: d["detail"] for d in refused}
    assert detail["junk2"].endswith("limits.max_models=2 is reached (a slot is kept for the config's model 'fraud')")
    assert detail["junk3"].endswith("limits.max_models=2 is reached")  # fraud holds its slot by then
    store.close()
    (tmp_path / "d.yaml").write_text("limits:\n  max_models: 2\n")
    default = ["--config", str(tmp_path / "d.yaml"), "--db", f"sqlite:///{tmp_path / 'b.db'}"]
    assert cli.main([*default, "replay", str(tmp_path / "e.jsonl")]) == 0
    store = Store(f"sqlite:///{tmp_path / 'b.db'}")
    assert sorted(json.loads(d["raw"])["model"] for d in store.dead_letters(reason="model_limit")) == [
        "fraud", "fraud", "junk3"]
    store.close()


def test_every_family_of_a_model_with_a_reference_stays_within_the_bound(tmp_path):
    """Second tryout: with a reference (label-free estimates, multivariate drift), tight limits, two trigger
    windows and folded variants/versions, a scrape held 555 series against a bound of 517."""
    spec = SimSpec(start=END - 10 * 86400, days=10, per_day=400, drift_day=None, seed=5)
    lines = [_enc.encode(e) for e in stream(spec, end=END)]
    lines += [_pred(i, variant=f"v-{i % 3}", version=f"b-{i % 3}") for i in range(300)]
    events = tmp_path / "e.jsonl"
    events.write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({
        "limits": {"max_models": 1, "max_variants_per_model": 1, "max_versions_per_model": 1},
        "features": {"amount": "numeric", "country": "categorical"}, "max_features": 2,
        "triggers": [{"name": "r1", "metric": "recall", "op": "<", "value": 0.7, "window": "1d"},
                     {"name": "r7", "metric": "recall", "op": "<", "value": 0.7, "window": "7d"}]}))
    db = f"sqlite:///{tmp_path / 'd.db'}"
    assert cli.main(["--config", str(cfg), "--db", db, "replay", str(events)]) == 0
    assert cli.main(["--config", str(cfg), "--db", db, "reference", "set", "--model", "fraud",
                     "--from", "2026-11-20", "--to", "2026-11-27"]) == 0
    config = load(cfg)
    store = Store(db, clock=lambda: END)
    series = _series(_scrape(config, store))
    names = {n for n, _ in series}
    assert any(n.startswith("driftline_estimated_") for n in names)
    assert any(n.startswith("driftline_multivariate_drift_") for n in names)
    assert len(series) <= documented_bound(config) == series_bound(config)
    store.close()
