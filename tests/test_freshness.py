"""Freshness follows arrivals: one prediction stamped 23 h ahead by a skewed producer clock (accepted: under the
1-day future limit) moved driftline_last_event_timestamp_seconds, and with it the freshness recording rule and the
silence_seconds trigger, 23 h ahead, so a feed that stopped looked fresh for a day (SRE tryout). The time events
were last stored (by the writer's clock, in the batch's transaction) is exported and judged instead."""

from __future__ import annotations

import subprocess
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import msgspec
import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from driftline.config import from_dict, load
from driftline.exporter.collector import SnapshotCollector
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage.store import Store
from driftline.triggers import runner
from driftline.triggers.rules import render_rules, to_yaml

from services import require_binary

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "driftline.example.yaml"
T0 = 1_795_996_800.0  # 2026-11-30T00:00:00Z


def _prediction(pid: str, ts: float) -> bytes:
    stamp = datetime.fromtimestamp(ts, timezone.utc).isoformat().replace("+00:00", "Z")
    return msgspec.json.encode({"type": "prediction", "prediction_id": pid, "model": "fraud", "model_version": "v1",
                                "variant": "A", "ts": stamp, "score": 0.3, "features": {}})


def _scrape(store: Store, config, now: float) -> dict[tuple[str, str], float]:
    reg = CollectorRegistry()
    reg.register(SnapshotCollector(store, config, clock=lambda: now, cache_s=0.0))
    out = {}
    for fam in text_string_to_metric_families(generate_latest(reg).decode()):
        for s in fam.samples:
            if s.name.startswith("driftline_last_"):
                out[(s.name, s.labels["type"])] = s.value
    return out


@pytest.fixture
def skewed(tmp_path):
    """A database fed at T0 (ts 1 min before) and at T0 + 10 s with one prediction stamped 23 h ahead."""
    clock = [T0]
    url = f"sqlite:///{tmp_path / 'f.db'}"
    store = Store(url, clock=lambda: clock[0])
    store.migrate()
    config = load(EXAMPLE)
    pipe = Pipeline(config, store, clock=lambda: clock[0])
    pipe.process_batch([RawRecord("file:a", 0, 0, _prediction("p1", T0 - 60))])
    clock[0] = T0 + 10
    pipe.process_batch([RawRecord("file:a", 0, 1, _prediction("p2", T0 + 23 * 3600))])
    assert store.counters()[("events", "prediction")] == 2  # accepted: under the 1-day future limit
    yield url, config, store
    store.close()


def test_last_stored_is_the_arrival_and_every_replica_exports_it(skewed) -> None:
    url, config, store = skewed
    now = T0 + 3600  # the feed stopped an hour ago
    got = _scrape(store, config, now)
    assert got[("driftline_last_event_timestamp_seconds", "prediction")] == pytest.approx(T0 + 23 * 3600)
    assert got[("driftline_last_stored_timestamp_seconds", "prediction")] == pytest.approx(T0 + 10)
    assert ("driftline_last_stored_timestamp_seconds", "outcome") not in got  # none stored yet
    other = Store(url)  # another replica over the same database (its own clock): reads the stored value
    try:
        assert _scrape(other, config, now)[("driftline_last_stored_timestamp_seconds", "prediction")] == \
            pytest.approx(T0 + 10)
    finally:
        other.close()


def test_a_stored_time_never_moves_back(skewed) -> None:
    url, config, store = skewed
    behind = Store(url, clock=lambda: T0 - 500)  # a writer whose clock is behind
    try:
        Pipeline(config, behind, clock=lambda: T0 - 500).process_batch(
            [RawRecord("file:b", 0, 0, _prediction("p3", T0))])
    finally:
        behind.close()
    assert store.last_stored("prediction") == pytest.approx(T0 + 10)


def test_silence_trigger_counts_from_the_arrival_not_the_future_stamp(skewed) -> None:
    url, _, store = skewed
    config = from_dict({**yaml.safe_load(EXAMPLE.read_text()), "triggers": [
        {"name": "silent", "metric": "silence_seconds", "op": ">", "value": 1800, "min_n": 1}]})
    run = runner.run(store, config, now=T0 + 3600, persist=False)
    state = run.evaluations[0].state
    assert state.value == pytest.approx(3590) and state.state == "firing"


def test_rendered_silence_alert_fires_despite_a_future_stamp_promtool_test_rules(tmp_path) -> None:
    """The generated silence_seconds alert judges the stored time: predictions last stored at 5 m, the last one
    stamped 23 h ahead; the alert fires once 30 min have passed (it never would on the event time)."""
    cfg = from_dict({"triggers": [{"name": "silent", "metric": "silence_seconds", "op": ">", "value": 1800,
                                   "min_n": 1}]})
    (tmp_path / "r.yml").write_text(to_yaml(render_rules(cfg)))
    (tmp_path / "t.yml").write_text(textwrap.dedent("""
        rule_files: [r.yml]
        evaluation_interval: 1m
        tests:
          - interval: 1m
            input_series:
              - series: 'driftline_last_stored_timestamp_seconds{job="driftline", instance="a", type="prediction"}'
                values: '0+60x5 300x60'
              - series: 'driftline_last_event_timestamp_seconds{job="driftline", instance="a", type="prediction"}'
                values: '0+60x4 83100x60'
              - series: 'driftline_events_total{job="driftline", instance="a", source="all", type="prediction"}'
                values: '0+1x5 5x60'
            promql_expr_test:
              - expr: count(ALERTS{alertname="Silent", alertstate="firing"})
                eval_time: 20m
                exp_samples: []
              - expr: count(ALERTS{alertname="Silent", alertstate="firing"})
                eval_time: 40m
                exp_samples:
                  - labels: '{}'
                    value: 1
    """))
    res = subprocess.run([require_binary("promtool"), "test", "rules", str(tmp_path / "t.yml")], capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stdout + res.stderr
