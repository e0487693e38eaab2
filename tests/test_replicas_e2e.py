"""Issue 16 parts 1 and 4 end to end: two `driftline serve` replicas over one PostgreSQL database, scraped by a real
Prometheus (Debian `prometheus`) that sends its alerts to a real Alertmanager (`prometheus-alertmanager`, routing
of deploy/alertmanager/alertmanager.yml) whose webhook deliveries the test records.

- Dashboards and recording rules give the values of one replica: only the replica holding the exporter lock
  exports the series read from the database (`driftline_leader` says which), also after it stops.
- One condition → one notification group and one resolve: with notify.alertmanager_url set, driftline's notifier
  (leader replica only) is the only sender of trigger alerts; the rules rendered from that config hold none.
- The rules rendered for Prometheus as the sender (the same triggers without notify.alertmanager_url) give one
  ALERTS series across the replicas (they are loaded with a label Prometheus drops before sending, so they cannot
  page here)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

import yaml

from am_fixtures import Alertmanager, alertmanager_sink, free_port  # noqa: F401 - fixture
from driftline.config import load
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.ingest.simulate import SimSpec, stream
from driftline.storage.store import Store
from helpers import outcome, pred
from procs import stop
from services import require_binary

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "driftline.example.yaml"
ALERT = "RecallBelowTarget"
HOUR = int(time.time() // 3600) * 3600
SIM_END = HOUR - 9 * 86400      # four simulated weeks ending 9 days ago, drift in the last one
WHOLE = 'model="fraud", variant="all", window="7d"'


def _ingest(config: Any, url: str, raws: list[bytes], first: int) -> None:
    store = Store(url)
    try:
        store.migrate()
        Pipeline(config, store).process_batch([RawRecord("file:sim", 0, first + i, r) for i, r in enumerate(raws)])
    finally:
        store.close()


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def _wait(what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = check()
        except OSError:
            got = None
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.3)


def _stop(proc: subprocess.Popen) -> None:
    stop(proc, timeout=15)


def test_two_replicas_count_once_and_page_once(tmp_path, pg_url, alertmanager_sink):
    prometheus = require_binary("prometheus")
    am: Alertmanager = alertmanager_sink
    raw = yaml.safe_load(EXAMPLE.read_text())
    for trig in raw["triggers"]:
        trig["for"], trig["cooldown"] = "1s", "0s"
    raw["schedule"] = {"evaluate_every": "1s"}
    prom_raw = json.loads(json.dumps(raw))  # the same triggers, Prometheus as their sender
    raw["notify"] = {"alertmanager_url": am.url, "retries": 0}
    cfg, prom_cfg_src = tmp_path / "driftline.yaml", tmp_path / "prometheus-sends.yaml"
    cfg.write_text(yaml.safe_dump(raw, sort_keys=False))
    prom_cfg_src.write_text(yaml.safe_dump(prom_raw, sort_keys=False))
    config = load(cfg)

    def cli(config_path: Path, *args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "driftline.cli", "--config", str(config_path), "--db", pg_url,
                               *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
        return done.stdout

    rules = tmp_path / "triggers.rules.yml"
    cli(cfg, "alerts", "render", "--out", str(rules))
    copy = yaml.safe_load(cli(prom_cfg_src, "alerts", "render"))
    for r in copy["groups"][0]["rules"]:
        r["labels"]["e2e_copy"] = "1"
    copy["groups"][0]["name"] = "prometheus-as-sender"
    copy_rules = tmp_path / "prometheus-sends.rules.yml"
    copy_rules.write_text(yaml.safe_dump(copy, sort_keys=False))

    enc = msgspec.json.Encoder()
    events = [enc.encode(e) for e in stream(SimSpec(start=SIM_END - 28 * 86400, days=28, per_day=600,
                                                    drift_day=21, seed=7), end=SIM_END)]
    _ingest(config, pg_url, events, 0)

    procs: list[subprocess.Popen] = []
    try:
        ports = [free_port(), free_port()]
        for i, port in enumerate(ports):
            log = (tmp_path / f"serve{i}.log").open("wb")
            procs.append(subprocess.Popen([sys.executable, "-m", "driftline.cli", "--config", str(cfg), "--db", pg_url,
                                           "serve", "--port", str(port), "--time", "event"],
                                          stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path))
        prom_port = free_port()
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules), str(copy_rules), str(REPO / "alerts" / "recording.rules.yml"),
                           str(REPO / "alerts" / "meta.rules.yml")],
            "alerting": {"alert_relabel_configs": [{"source_labels": ["e2e_copy"], "regex": "1", "action": "drop"}],
                         "alertmanagers": [{"static_configs": [{"targets": [am.url.split("//")[1]]}]}]},
            "scrape_configs": [{"job_name": "driftline",
                                "static_configs": [{"targets": [f"127.0.0.1:{p}" for p in ports]}]}]}))
        procs.append(subprocess.Popen([prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
                                       f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                       f"--web.listen-address=127.0.0.1:{prom_port}"],
                                      stdout=(tmp_path / "prometheus.log").open("wb"), stderr=subprocess.STDOUT))
        prom = f"http://127.0.0.1:{prom_port}"

        def q(expr: str) -> list[dict[str, Any]]:
            body = _get(f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
            assert body["status"] == "success", body
            return body["data"]["result"]

        def value(expr: str) -> float | None:
            res = q(expr)
            assert len(res) <= 1, (expr, res)
            return float(res[0]["value"][1]) if res else None

        def firing_alerts() -> list[dict[str, Any]]:
            return [a for a in _get(f"{prom}/api/v1/alerts")["data"]["alerts"]
                    if a["labels"]["alertname"] == ALERT and a["state"] == "firing"]

        one = json.loads(cli(cfg, "metrics", "--json"))["counts"]["predictions"]
        _wait("both replicas scraped", lambda: value('count(up{job="driftline"} == 1)') == 2)
        _wait("the whole-model series", lambda: q(f"driftline_window_predictions{{{WHOLE}}}"))
        _wait("the trigger to fire", lambda: value('model_severity:driftline_trigger_firing:sum{severity="critical"}'))
        _wait("the rendered rule to fire", firing_alerts)
        _wait("Alertmanager to notify", lambda: am.sink.of(ALERT))
        time.sleep(4)  # several group intervals (1 s): a second group would have been notified by now

        # Dashboards: "Predictions in window" and "Triggers firing" as one replica gives them.
        assert value(f"sum(driftline_window_predictions{{{WHOLE}}})") == one
        assert value(f"count(driftline_window_predictions{{{WHOLE}}})") == 1
        assert value('model_severity:driftline_trigger_firing:sum{model="fraud", severity="critical"}') == 1
        assert value('sum(driftline_trigger_firing{trigger="recall_below_target"})') == 1
        assert (value("sum(driftline_leader)"), value("count(driftline_leader)")) == (1, 2)
        # Prometheus as the sender: one alert across both replicas, its identity without `instance`.
        (alert,) = firing_alerts()
        assert "instance" not in alert["labels"]
        # One notification group for the condition.
        pages = am.sink.of(ALERT)
        assert len({p["groupKey"] for p in pages}) == 1, [p["groupLabels"] for p in pages]
        assert [p["status"] for p in pages] == ["firing"], pages
        assert {a["labels"]["trigger"] for p in pages for a in p["alerts"]} == {"recall_below_target"}

        # The replica that exports stops: the other takes over; same values, no new page.
        leader_port = int(q("driftline_leader == 1")[0]["metric"]["instance"].rsplit(":", 1)[1])
        _stop(procs[ports.index(leader_port)])
        other = f"127.0.0.1:{ports[1 - ports.index(leader_port)]}"
        _wait("the standby to export", lambda: q(f'driftline_window_predictions{{{WHOLE}, instance="{other}"}}'))
        # Prometheus marks the stopped replica's series stale at its first failed scrape; until then (up to one
        # scrape interval after the standby's first export: CI saw 2 × the count) both are in a query's lookback
        _wait("the stopped replica's scrape to fail", lambda: value(f'up{{instance="127.0.0.1:{leader_port}"}}') == 0)
        assert value(f"sum(driftline_window_predictions{{{WHOLE}}})") == one
        time.sleep(4)
        assert [p["status"] for p in am.sink.of(ALERT)] == ["firing"]

        # Recovery: a day of well-caught frauds; the 7-day window (ending at the newest prediction) holds only it.
        good = []
        for i in range(200):
            good += [pred(f"good-{i}", 0.9, HOUR - 7200), outcome(f"good-{i}", 1, HOUR - 3600),
                     pred(f"fine-{i}", 0.1, HOUR - 7200), outcome(f"fine-{i}", 0, HOUR - 3600)]
        _ingest(config, pg_url, good, len(events))
        _wait("the resolve notification", lambda: [p for p in am.sink.of(ALERT) if p["status"] == "resolved"])
        time.sleep(4)
        pages = am.sink.of(ALERT)
        assert [p["status"] for p in pages] == ["firing", "resolved"], pages
        assert len({p["groupKey"] for p in pages}) == 1
        assert value('sum(driftline_trigger_firing{trigger="recall_below_target"})') == 0
    finally:
        for proc in reversed(procs):
            _stop(proc)
