"""End to end with a real Prometheus (Debian package `prometheus`) scraping a running `driftline serve` fed by the
simulator (issue 5, first required test): every Grafana dashboard panel query, variables substituted, returns data
through Prometheus' HTTP API, and the rendered RecallBelowTarget alert goes firing once the simulator's drift
(day 21) pushes the 7-day recall under the agreed 0.70 line (seed 000, step 6)."""

from __future__ import annotations

import json
import math
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec
import pytest

import yaml

from driftline.config import load
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.ingest.simulate import SimSpec, stream
from driftline.storage.store import Store

from procs import stop
from services import require_binary

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "driftline.example.yaml"
DASHBOARDS = sorted((REPO / "deploy" / "grafana" / "dashboards").glob("*.json"))
RULE_FILES = (REPO / "alerts" / "recording.rules.yml", REPO / "alerts" / "meta.rules.yml")
END = float(int(time.time() // 3600) * 3600)  # a recent whole hour: the simulated data ends here
START = END - 28 * 86400
SPLIT = END - 8 * 86400  # phase 1: events before it (no drift in the 7-day window); phase 2: the rest
ALERT = "RecallBelowTarget"

# Panel queries that legitimately return nothing in this setup (`driftline serve` over a replayed SQLite database,
# two triggers on recall and FPR, no notifier, no Kafka); every other panel query must return data, and each of
# these must indeed be empty (a stale entry fails the test).
SEL = 'cluster=~".*", job=~"driftline", instance=~".*"'   # the mixin's $cluster/$job/$instance, substituted
JOB = 'cluster=~".*", job=~"driftline"'
ALLOWED_EMPTY: dict[str, str] = {
    f'max by (trigger) (driftline_trigger_threshold{{{SEL}, model="fraud", metric="precision"}})':
        "trigger line of the precision panels: the example config has no precision trigger",
    f"driftline_consumer_lag_messages{{{SEL}}}":
        "consumer lag is exported only by `driftline run` (Kafka consumer), not by `serve`",
    f"job:driftline_batch_duration_seconds:quantile_rate5m{{{JOB}}}":
        "batch durations are observed only by `driftline run`; under `serve` no batch, so no quantile (not NaN)",
    f"job:driftline_batch_records:mean_rate5m{{{JOB}}}":
        "records per batch are observed only by `driftline run`; under `serve` no batch, so no mean (not NaN)",
    f"job_receiver:driftline_notifications_sent:rate5m{{{JOB}}}":
        "no notifier configured (notify has neither alertmanager_url nor webhook_url): no receiver series",
    f"job_receiver:driftline_notifications_failed:rate5m{{{JOB}}}":
        "no notifier configured (notify has neither alertmanager_url nor webhook_url): no receiver series",
    f'max by (readout, reason) (driftline_readout_unavailable{{{SEL}, model="fraud", window="7d", '
    'readout="estimated"})': "the reference set here has labels: the label-free estimates are exported, no reason",
    f'max by (readout, reason) (driftline_readout_unavailable{{{SEL}, model="fraud", window="7d", '
    'readout="multivariate"})': "the reference set here has a feature sample: multivariate drift is exported",
    **{f'driftline_window_matured_{n}{{{SEL}, model="fraud", variant=~"all", window="7d"}}':
       "the matured part's counts are exported under labels.policy implicit_negative_after only (while a window "
       "reaches into the maturity period); the example config's labels are explicit"
       for n in ("labelled", "positives", "true_positives", "false_positives")},
}

# Grafana's built-in interval variables, as Grafana would fill them for a short dashboard range.
BUILTINS = {"__rate_interval": "1m", "__interval": "1s", "__range": "5m"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _get_json(url: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.loads(r.read().decode())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status
    except urllib.error.HTTPError as err:
        return err.code
    except (urllib.error.URLError, OSError):
        return None


def _wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{proc.args[0]} exited with {proc.returncode} before {url} was ready:\n{log.read_text()}")
        if _status(url) == 200:
            return
        time.sleep(0.2)
    pytest.fail(f"{url} not ready within {timeout} s:\n{log.read_text()}")


def _start(args: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(args, stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=log.parent)


def _stop(proc: subprocess.Popen) -> None:
    stop(proc, timeout=10)


def _ingest(config: Any, db: Path, raws: list[bytes], first_offset: int) -> None:
    store = Store(f"sqlite:///{db}", clock=lambda: END)
    try:
        store.migrate()
        Pipeline(config, store, clock=lambda: END).process_batch(
            [RawRecord("file:sim", 0, first_offset + i, r) for i, r in enumerate(raws)])
    finally:
        store.close()


def _cli(cfg: Path, db: Path | None, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "driftline.cli", "--config", str(cfg)]
    if db is not None:
        cmd += ["--db", f"sqlite:///{db}"]
    done = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(cmd + list(args))} failed:\n{done.stdout}\n{done.stderr}"
    return done


def _variables(dashboard: dict[str, Any], overrides: dict[str, str]) -> dict[str, str]:
    """Each templating variable's value: the override, else its current value (`$__all` → its allValue)."""
    values: dict[str, str] = {}
    for var in dashboard.get("templating", {}).get("list", []):
        current = (var.get("current") or {}).get("value")
        if isinstance(current, list):
            current = "|".join(current) if current else None
        if current == "$__all":
            current = var.get("allValue") or ".*"
        if current is not None:
            values[var["name"]] = str(current)
    values.update(overrides)
    return values


def _substitute(expr: str, values: dict[str, str]) -> str:
    """`expr` with Grafana's $var, ${var}, ${var:fmt} and [[var]] references replaced by `values`."""
    def repl(m: re.Match) -> str:
        name = m.group(1) or m.group(2) or m.group(3)
        assert name in values, f"no value for dashboard variable ${name} in {expr!r}"
        return values[name]
    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)", repl, expr)


def _panel_queries() -> list[tuple[str, str]]:
    """(where, expr) of every panel target of every dashboard, variables substituted ($variant as "all", and
    also as "A" on the A/B dashboard)."""
    out: list[tuple[str, str]] = []

    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for p in items:
            yield p
            yield from panels(p.get("panels", []))

    for path in DASHBOARDS:
        board = json.loads(path.read_text())
        variants = ("all", "A") if "ab" in path.stem.split("-") else ("all",)
        for variant in variants:
            values = {**_variables(board, {"model": "fraud", "variant": variant, "window": "7d",
                                           "datasource": "prometheus"}), **BUILTINS}
            for panel in panels(board.get("panels", [])):
                says = " [noValue]" if panel.get("fieldConfig", {}).get("defaults", {}).get("noValue") else ""
                for target in panel.get("targets", []):
                    if target.get("expr"):
                        out.append((f"{path.name} / {panel.get('title')!r} ($variant={variant}){says}",
                                    _substitute(target["expr"], values)))
    return out


def _has_data(result: list[dict[str, Any]]) -> bool:
    """True when an instant-query result has a sample that is a number (Grafana draws nothing for NaN)."""
    return any(not math.isnan(float(r["value"][1])) for r in result)


class Stack:
    """The running processes and their addresses."""

    def __init__(self, tmp: Path, cfg: Path, db: Path, phase2: list[bytes], phase2_offset: int,
                 config: Any, prom_url: str) -> None:
        self.tmp, self.cfg, self.db, self.config = tmp, cfg, db, config
        self.phase2, self.phase2_offset, self.prom_url = phase2, phase2_offset, prom_url

    def query(self, expr: str) -> list[dict[str, Any]]:
        url = f"{self.prom_url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        body = _get_json(url)
        assert body is not None and body.get("status") == "success", f"query failed: {expr!r}: {body}"
        return body["data"]["result"]

    def poll(self, expr: str, timeout: float = 20.0) -> list[dict[str, Any]]:
        """The result of `expr` once non-empty (Prometheus needs a scrape or two), else the last empty one."""
        deadline = time.monotonic() + timeout
        while not (result := self.query(expr)) and time.monotonic() < deadline:
            time.sleep(0.5)
        return result

    def alert_states(self, name: str) -> set[str]:
        body = _get_json(f"{self.prom_url}/api/v1/alerts")
        assert body is not None and body.get("status") == "success", body
        return {a["state"] for a in body["data"]["alerts"] if a["labels"].get("alertname") == name}


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[Stack]:
    prometheus = require_binary("prometheus")
    tmp = tmp_path_factory.mktemp("prom_e2e")

    # Config: the example, with a short `for` so the rendered alert fires within seconds.
    raw_cfg = yaml.safe_load(EXAMPLE.read_text())
    for trig in raw_cfg["triggers"]:
        trig["for"] = "2s"
    cfg = tmp / "driftline.yaml"
    cfg.write_text(yaml.safe_dump(raw_cfg, sort_keys=False))
    config = load(cfg)
    rules = tmp / "triggers.rules.yml"
    _cli(cfg, None, "alerts", "render", "--out", str(rules))

    # Database: 28 simulated days, drift at day 21; phase 1 only (the 7-day window ends before the drift).
    enc = msgspec.json.Encoder()
    events = list(stream(SimSpec(start=START, days=28, per_day=600, drift_day=21, seed=7), end=END))
    ts = [datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp() for e in events]
    phase1 = [enc.encode(e) for e, t in zip(events, ts) if t < SPLIT]
    phase1 += [b"{broken", b'{"type":"outcome","prediction_id":"x"}', phase1[0]]  # 2 dead letters, 1 duplicate
    phase2 = [enc.encode(e) for e, t in zip(events, ts) if t >= SPLIT]
    db = tmp / "e2e.db"
    _ingest(config, db, phase1, 0)
    _cli(cfg, db, "reference", "set", "--from", _iso(START), "--to", _iso(START + 14 * 86400))

    procs: list[subprocess.Popen] = []
    try:
        port = _free_port()
        serve_log = tmp / "serve.log"
        procs.append(_start([sys.executable, "-m", "driftline.cli", "--config", str(cfg), "--db", f"sqlite:///{db}",
                             "serve", "--port", str(port), "--time", "event"], serve_log))
        _wait_ready(f"http://127.0.0.1:{port}/readyz", procs[-1], serve_log)

        prom_port = _free_port()
        prom_cfg = tmp / "prometheus.yml"
        prom_cfg.write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules)] + [str(p) for p in RULE_FILES],
            "scrape_configs": [{"job_name": "driftline",
                                "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}],
        }))
        prom_log = tmp / "prometheus.log"
        procs.append(_start([prometheus, f"--config.file={prom_cfg}", f"--storage.tsdb.path={tmp / 'data'}",
                             f"--web.listen-address=127.0.0.1:{prom_port}", "--web.enable-lifecycle"], prom_log))
        prom_url = f"http://127.0.0.1:{prom_port}"
        _wait_ready(f"{prom_url}/-/ready", procs[-1], prom_log)
        yield Stack(tmp, cfg, db, phase2, len(phase1), config, prom_url)
    finally:
        for proc in reversed(procs):
            _stop(proc)


def test_serve_time_event_over_static_history_raises_no_meta_alert(stack: Stack) -> None:
    """Issue 16.6: `serve --time event` over history nobody adds to says so (driftline_time_basis), and no
    meta-alert is even pending: DriftlineNoPredictions (increase == 0 after two scrapes) used to be."""
    assert stack.poll('driftline_time_basis{job="driftline", basis="event"} == 1')
    assert stack.poll('count_over_time(driftline_events_total{job="driftline", type="prediction"}[1m]) >= 4')
    time.sleep(3)  # more rule evaluations (every 1 s) over the flat counter
    meta = [r["alert"] for g in yaml.safe_load(RULE_FILES[1].read_text())["groups"] for r in g["rules"]]
    assert len(meta) >= 10
    pending = {n: stack.alert_states(n) for n in meta if stack.alert_states(n)}
    assert not pending, pending


def test_dashboard_queries_and_recall_alert_with_real_prometheus(stack: Stack) -> None:
    """Every panel query returns data (except the explicit allow-list), and RecallBelowTarget is quiet before
    the drift and reaches firing after it (seed 000: recall < 0.70 over 7 days)."""
    queries = _panel_queries()
    assert len(queries) > 50
    assert set(ALLOWED_EMPTY) <= {e for _, e in queries}, "allow-list entry that no panel uses"

    # Every rule file loaded (the rendered triggers with their 2 s `for`, recording and meta rules) and evaluates.
    rules = _get_json(f"{stack.prom_url}/api/v1/rules")
    assert rules is not None and rules["status"] == "success", rules
    loaded = {Path(g["file"]).name: g for g in rules["data"]["groups"]}
    assert set(loaded) == {"triggers.rules.yml"} | {p.name for p in RULE_FILES}, loaded.keys()
    recall_rule = [r for r in loaded["triggers.rules.yml"]["rules"] if r["name"] == ALERT]
    assert len(recall_rule) == 1 and recall_rule[0]["duration"] == 2, recall_rule

    # Before the drift: the 7-day recall is about 0.8, well above the line; the alert is neither pending nor firing.
    recall = stack.poll('driftline_recall_ratio{model="fraud", variant="all", window="7d"}')
    assert len(recall) == 1 and 0.7 < float(recall[0]["value"][1]) <= 0.95, recall
    assert stack.query('driftline_window_positives{model="fraud", variant="all", window="7d"} >= 30')
    time.sleep(3)  # longer than `for: 2s`, so a wrong alert would have reached firing
    assert not stack.alert_states(ALERT)

    # After the drift: the serving process reads the same database at scrape time.
    _ingest(stack.config, stack.db, stack.phase2, stack.phase2_offset)
    seen: set[str] = set()
    deadline = time.monotonic() + 40
    while "firing" not in seen and time.monotonic() < deadline:
        seen |= stack.alert_states(ALERT)
        time.sleep(0.5)
    recall = stack.query('driftline_recall_ratio{model="fraud", variant="all", window="7d"}')
    assert len(recall) == 1 and float(recall[0]["value"][1]) < 0.7, recall
    assert "firing" in seen, f"{ALERT} never fired (states seen: {seen}); recall {recall}"
    firing = stack.query(f'ALERTS{{alertname="{ALERT}", alertstate="firing"}}')
    assert firing and firing[0]["metric"]["severity"] == "critical"

    # Every panel query, now that events have flowed between scrapes (the rate panels need that): poll until all
    # but the allow-listed ones have data, or the deadline.
    deadline = time.monotonic() + 30
    while True:
        empty = {(where, e) for where, e in queries if not _has_data(stack.query(e))}
        unexpected = {(w, e) for w, e in empty if e not in ALLOWED_EMPTY}
        if not unexpected or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert not unexpected, "panel queries without data:\n" + "\n".join(f"{w}: {e}" for w, e in sorted(unexpected))
    assert {e for _, e in empty} == set(ALLOWED_EMPTY), "allow-listed queries that now return data"
    # An empty panel must say why (issue 16 part 5): a panel all of whose queries are empty has a noValue text.
    mute = sorted({w for w, _ in empty if all((w2, e) in empty for w2, e in queries if w2 == w)
                   and not w.endswith("[noValue]")})
    assert not mute, "panels that would show a bare 'No data':\n" + "\n".join(mute)
    rules = _get_json(f"{stack.prom_url}/api/v1/rules")
    assert rules is not None
    broken = [(r["name"], r.get("lastError")) for g in rules["data"]["groups"] for r in g["rules"]
              if r.get("health") != "ok"]
    assert not broken, f"rules failing to evaluate: {broken}"
