"""Prometheus exporter: a real scrape over HTTP of a running Service over a simulated SQLite database, checked
with the real `promtool check metrics` (Debian package prometheus) and against `driftline metrics --json` for the
same window; trigger, counter and live ops series; snapshot caching; /healthz and /readyz; `driftline serve`
shutting down cleanly on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import msgspec
import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import driftline
from driftline import cli
from driftline.config import from_dict, load
from driftline.exporter.collector import SnapshotCollector
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.service.process import Service
from driftline.ingest.simulate import SimSpec, stream
from driftline.storage.store import Store
from driftline.triggers import history
from driftline.triggers.drift_hook import default_provider
from driftline.readouts.windows import merged, window_ending

from services import require_binary

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "driftline.example.yaml"
END = 1_795_996_800.0  # 2026-11-30T00:00:00Z
RATES = ("recall", "fpr", "precision", "alert_rate", "prevalence", "specificity", "accuracy")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("exp") / "e.db"
    config = load(EXAMPLE)
    store = Store(f"sqlite:///{path}", clock=lambda: END)
    store.migrate()
    enc = msgspec.json.Encoder()
    spec = SimSpec(start=END - 10 * 86400, days=10, per_day=500, drift_day=5, seed=3)
    raws = [enc.encode(e) for e in stream(spec, end=END)]
    raws += [b"{broken", b'{"type":"outcome","prediction_id":"x"}', raws[0]]  # 2 dead letters, 1 duplicate
    Pipeline(config, store, clock=lambda: END).process_batch(
        [RawRecord("file:sim", 0, i, r) for i, r in enumerate(raws)])
    yield path, config, store
    store.close()


@pytest.fixture
def service(db):
    path, config, store = db
    svc = Service(config, store, clock=lambda: END, port=0)
    svc.start()
    deadline = time.monotonic() + 10
    while svc.last_run is None and time.monotonic() < deadline:  # first evaluation runs at start
        time.sleep(0.05)
    assert svc.last_run is not None
    yield svc
    svc.stop()


def _get(url: str, accept: str | None = None) -> tuple[int, str, str]:
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()


def _samples(text: str) -> dict[tuple[str, frozenset], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def _win(variant: str = "all", version: str = "all", window: str = "7d") -> dict[str, str]:
    return {"model": "fraud", "model_version": version, "variant": variant, "window": window}


def _val(samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def _metrics_json(db_path: Path, capsys, *extra: str) -> dict:
    assert cli.main(["--config", str(EXAMPLE), "--db", f"sqlite:///{db_path}", "metrics", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_scrape_passes_promtool_check_metrics(service):
    status, ctype, body = _get(service.url + "/metrics")
    assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
    promtool = require_binary("promtool")
    res = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True)
    assert (res.returncode, res.stdout + res.stderr) == (0, "")
    assert "driftline_recall_ratio{" in body and "driftline_build_info{version=" in body


def test_scrape_values_equal_metrics_json_for_the_same_window(service, db, capsys):
    path, config, store = db
    s = _samples(_get(service.url + "/metrics")[2])
    doc = _metrics_json(path, capsys, "--at", repr(END))
    w = _win()
    for name in RATES:
        r = doc["metrics"][name]
        assert _val(s, f"driftline_{name}_ratio", **w) == r["value"], name
        assert _val(s, f"driftline_{name}_lower_ratio", **w) == r["low"], name
        assert _val(s, f"driftline_{name}_upper_ratio", **w) == r["high"], name
    lc = doc["label_coverage"]
    assert (_val(s, "driftline_label_coverage_ratio", **w), _val(s, "driftline_label_coverage_upper_ratio", **w)
            ) == (lc["value"], lc["high"])
    c = doc["counts"]
    assert [_val(s, f"driftline_window_{k}", **w) for k in
            ("predictions", "labelled", "positives", "true_positives", "false_positives")] == [
        c["predictions"], c["labelled"], c["positives"], c["tp"], c["fp"]]
    m = doc["metrics"]
    assert _val(s, "driftline_roc_auc", **w) == m["roc_auc"]["value"]
    assert _val(s, "driftline_average_precision", **w) == m["average_precision"]["value"]
    assert _val(s, "driftline_brier_score", **w) == m["brier"]["value"]
    assert _val(s, "driftline_log_loss", **w) == m["log_loss"]["value"]
    assert _val(s, "driftline_ece", **w) == m["ece"]["value"]
    assert _val(s, "driftline_label_delay_seconds", quantile="0.95", **w) == doc["label_delay_seconds"]["p95"]
    for arm, version in (("A", "v1"), ("B", "v2")):
        d = _metrics_json(path, capsys, "--at", repr(END), "--variant", arm)
        wv = _win(arm, version)
        for name in RATES:
            assert _val(s, f"driftline_{name}_ratio", **wv) == d["metrics"][name]["value"], (arm, name)
        assert _val(s, "driftline_window_predictions", **wv) == d["counts"]["predictions"]


def test_trigger_counter_and_build_series(service, db):
    path, config, store = db
    s = _samples(_get(service.url + "/metrics")[2])
    states = history.load_states(store, "fraud")
    for t in config.triggers:
        lbl = {"model": "fraud", "trigger": t.name, "severity": t.severity}
        st = states[t.name]
        assert _val(s, "driftline_trigger_threshold", metric=t.metric, **lbl) == t.value
        assert _val(s, "driftline_trigger_value", **lbl) == st.judged
        one_hot = {k: _val(s, "driftline_trigger_state", state=k, **lbl)
                   for k in ("ok", "pending", "firing", "resolved", "insufficient_data")}
        assert one_hot[st.state] == 1.0 and sum(one_hot.values()) == 1.0
        assert _val(s, "driftline_trigger_firing", **lbl) == (1.0 if st.state == "firing" else 0.0)
    c = store.counters()
    assert _val(s, "driftline_events_total", source="all", type="prediction") == c[("events", "prediction")]
    assert _val(s, "driftline_events_total", source="all", type="outcome") == c[("events", "outcome")]
    assert _val(s, "driftline_duplicates_total", type="prediction") == 1.0
    dead = {k: v for (n, k), v in c.items() if n == "dead_letters"}
    assert sum(dead.values()) == 2
    for reason, v in dead.items():
        assert _val(s, "driftline_dead_letters_total", reason=reason) == v
    assert _val(s, "driftline_expired_predictions_total") == 0.0
    for name, key in (("driftline_label_corrections_total", "corrections"), ("driftline_stale_outcomes_total",
                      "stale_outcomes"), ("driftline_implicit_negatives_total", "implicit_negatives")):
        assert _val(s, name) == c.get((key, ""), 0)
    for label in ("positive", "negative"):  # exported from the start, at 0 until one occurs
        assert _val(s, "driftline_implicit_negatives_relabelled_total", label=label) == c.get(
            ("implicit_relabelled", label), 0)
    assert _val(s, "driftline_last_event_timestamp_seconds", type="prediction") == pytest.approx(
        store.newest_event("prediction"), abs=1e-6)
    assert _val(s, "driftline_join_predictions") == store.join_size() > 0
    assert _val(s, "driftline_pending_outcomes") == store.pending_outcomes()
    assert _val(s, "driftline_build_info", version=driftline.__version__) == 1.0
    assert _val(s, "driftline_time_basis", basis="wall") == 1.0


def test_the_time_basis_is_exported_from_the_first_scrape(db):
    """Meta-alerts (DriftlineNoPredictions, DriftlineLabelsStalled) expect no flow on replayed history: the exporter
    says which basis it serves, even before the schema is ready, on a standby and with the database down."""
    path, config, store = db
    migrating = threading.Event()
    for basis in ("wall", "event"):
        col = SnapshotCollector(store, config, clock=lambda: END, cache_s=0.0, time_basis=basis,
                                schema_ready=migrating)
        s = {m.name: m for m in col.collect()}
        assert [(x.labels, x.value) for x in s["driftline_time_basis"].samples] == [({"basis": basis}, 1.0)]
        standby = SnapshotCollector(store, config, clock=lambda: END, cache_s=0.0, time_basis=basis,
                                    leader=lambda: False)
        assert "driftline_time_basis" in {m.name for m in standby.collect()}


def test_live_ops_metrics_are_served_and_lost_partitions_disappear(service):
    service.ops.set_lags({("predictions", 0): 12, ("predictions", 1): 3})
    service.ops.observe_batch(0.2)
    s = _samples(_get(service.url + "/metrics")[2])
    assert _val(s, "driftline_consumer_lag_messages", topic="predictions", partition="1") == 3
    assert _val(s, "driftline_batch_duration_seconds_count") == 1
    assert _val(s, "driftline_batch_duration_seconds_bucket", le="0.25") == 1
    assert _val(s, "driftline_batch_duration_seconds_bucket", le="0.1") == 0
    service.ops.set_lags({("predictions", 0): 5})
    s = _samples(_get(service.url + "/metrics")[2])
    assert _val(s, "driftline_consumer_lag_messages", topic="predictions", partition="0") == 5
    assert not any(n == "driftline_consumer_lag_messages" and ("partition", "1") in lbl for n, lbl in s)


def test_openmetrics_negotiation(service):
    status, ctype, body = _get(service.url + "/metrics", accept="application/openmetrics-text; version=1.0.0")
    assert status == 200 and ctype.startswith("application/openmetrics-text")
    assert body.rstrip().endswith("# EOF") and "driftline_events_total{" in body


def test_snapshot_is_cached_between_quick_scrapes_and_has_no_stale_series(db):
    path, config, store = db
    tick = [0.0]
    col = SnapshotCollector(store, config, clock=lambda: END, cache_s=2.0, monotonic=lambda: tick[0])
    first = list(col.collect())
    list(col.collect())
    assert col.builds == 1
    tick[0] = 2.5
    list(col.collect())
    assert col.builds == 2
    names = {m.name for m in first}
    assert "driftline_recall_ratio" in names
    # a month later nothing is in the window: no windowed series at all, counters stay
    later = SnapshotCollector(store, config, clock=lambda: END + 30 * 86400)
    names = {m.name for m in later.collect()}
    assert "driftline_recall_ratio" not in names and "driftline_window_predictions" not in names
    assert "driftline_events" in names


def test_event_time_basis_ends_windows_at_the_newest_prediction(db, capsys):
    path, config, store = db
    col = SnapshotCollector(store, config, clock=lambda: END + 30 * 86400, time_basis="event")
    fam = {m.name: m for m in col.collect()}["driftline_recall_ratio"]
    got = {s.labels["variant"]: s.value for s in fam.samples if s.labels["window"] == "7d"}
    doc = _metrics_json(path, capsys)  # no --at: the newest prediction stored
    assert got["all"] == doc["metrics"]["recall"]["value"]


def test_healthz_and_readyz_with_database_and_readiness_callback(db, tmp_path):
    path, config, store = db
    state = {"ready": (False, "consumer has no partitions assigned")}
    svc = Service(config, store, clock=lambda: END, port=0, readiness=lambda: state["ready"], evaluate=False)
    svc.start()
    try:
        assert _get(svc.url + "/healthz")[:1] == (200,)
        code, _, body = _get(svc.url + "/readyz")
        assert code == 503 and "consumer has no partitions assigned" in body
        state["ready"] = (False, "database reachable, but its write lock is held by another writer")
        code, _, body = _get(svc.url + "/readyz")  # not "database ok; database reachable, but …" (SRE tryout)
        assert code == 503 and "database ok" not in body and "write lock is held" in body
        state["ready"] = (True, "consumer caught up")
        code, _, body = _get(svc.url + "/readyz")
        assert code == 200 and "database ok" in body
        assert _get(svc.url + "/nope")[0] == 404
    finally:
        svc.stop()
    broken = Store(f"sqlite:///{tmp_path / 'missing' / 'x.db'}")
    svc = Service(config, broken, port=0, evaluate=False)
    svc.start()
    try:
        code, _, body = _get(svc.url + "/readyz")
        assert code == 503 and "database unreachable" in body
        assert _get(svc.url + "/healthz")[0] == 200
        status, _, text = _get(svc.url + "/metrics")  # degraded: build info and live metrics only
        assert status == 200 and "driftline_build_info" in text and "driftline_recall_ratio" not in text
    finally:
        svc.stop()
        broken.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_driftline_serve_exports_and_stops_cleanly_on_sigterm(db):
    path, config, store = db
    port = _free_port()
    exe = Path(sys.executable).with_name("driftline")
    proc = subprocess.Popen([str(exe), "--config", str(EXAMPLE), "--db", f"sqlite:///{path}", "serve",
                             "--port", str(port), "--time", "event"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ})
    try:
        def up() -> tuple[int, str] | None:
            assert proc.poll() is None, proc.stderr.read()
            try:
                status, _, body = _get(f"http://127.0.0.1:{port}/metrics")
            except OSError:
                return None
            return (status, body) if "driftline_trigger_state" in body else None

        status, body = _poll(up, 20, "serve did not come up")
        assert status == 200 and 'driftline_recall_ratio{model="fraud"' in body
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
        assert proc.returncode == 0, err
        assert "driftline serve: stopped" in err
        start = " ".join(err.split())  # tryout: the start line named the config's model, not the stored one
        assert "(model stored: fraud; 2 trigger(s) of model fraud," in start, start
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_drift_series_for_declared_features_pass_promtool(db):
    path, config, store = db
    from driftline.readouts.references import build_reference_profile, save_reference

    cfg = from_dict({**yaml.safe_load(EXAMPLE.read_text()), "window": "3d"})
    provider = default_provider()
    start = store.bucket_range("fraud")[0]
    ref_stats = merged(store.buckets("fraud", start, start + 3 * 86400))
    save_reference(store, "fraud", build_reference_profile(ref_stats, cfg), "window", start, start + 3 * 86400,
                   confusion=ref_stats)
    col = SnapshotCollector(store, cfg, clock=lambda: END, drift=provider)
    reg = CollectorRegistry()
    reg.register(col)
    text = generate_latest(reg).decode()
    s = _samples(text)
    readings = {r.feature: r for r in provider(store, cfg, "fraud", window_ending(END, 3 * 86400, 3600), None)}
    assert set(readings) == set(cfg.features) | {None}
    for name in ("country", "amount"):
        lbl = {"model": "fraud", "window": "3d", "feature": name}
        assert _val(s, "driftline_feature_psi", **lbl) == readings[name].psi
        assert _val(s, "driftline_feature_js_distance", **lbl) == readings[name].js
        assert _val(s, "driftline_feature_drifted", **lbl) == float(readings[name].drifted)
    assert _val(s, "driftline_feature_drifted", model="fraud", window="3d", feature="country") == 1.0
    assert _val(s, "driftline_score_psi", model="fraud", window="3d") == readings[None].psi
    res = subprocess.run([require_binary("promtool"), "check", "metrics"], input=text, capture_output=True,
                         text=True)
    assert (res.returncode, res.stdout + res.stderr) == (0, "")


def _poll(check, timeout_s: float, what: str):
    """Call `check` every 0.1 s until it returns something; fail with `what` after `timeout_s` (a hang guard)."""
    for _ in range(int(timeout_s / 0.1)):
        found = check()
        if found is not None:
            return found
        time.sleep(0.1)
    raise AssertionError(what)


def test_a_standby_replica_exports_no_series_read_from_the_database(db):
    """Issue 16.4: replicas over one database must not count twice; only the exporter-lock holder exports them."""
    path, config, store = db
    leading = [False]
    col = SnapshotCollector(store, config, clock=lambda: END, cache_s=0.0, leader=lambda: leading[0])
    standby = {m.name: m for m in col.collect()}
    assert set(standby) == {"driftline_build_info", "driftline_time_basis", "driftline_leader"}
    assert standby["driftline_leader"].samples[0].value == 0.0
    leading[0] = True
    leader = {m.name: m for m in col.collect()}
    assert leader["driftline_leader"].samples[0].value == 1.0
    assert {"driftline_window_predictions", "driftline_events", "driftline_recall_ratio"} <= set(leader)


def test_every_known_dead_letter_reason_is_exported_from_the_start(tmp_path):
    """An empty database exports driftline_dead_letters_total at 0 for every documented reason, so the Pipeline
    dashboard's dead-letter panels show 0 rather than "no data" (issue 16 part 5); a stored reason keeps its count."""
    from driftline.core.events import DEAD_LETTER_REASONS
    store = Store(f"sqlite:///{tmp_path / 'empty.db'}", clock=lambda: END)
    store.migrate()
    try:
        col = SnapshotCollector(store, load(EXAMPLE), clock=lambda: END)
        reg = CollectorRegistry()
        reg.register(col)
        s = _samples(generate_latest(reg).decode())
        exported = {dict(k)["reason"]: v for (n, k), v in s.items() if n == "driftline_dead_letters_total"}
        assert exported == {r: 0.0 for r in DEAD_LETTER_REASONS}
        assert {"invalid_json", "ts_in_future", "store_rejected", "model_limit", "reserved_label",
                "internal_error"} <= set(exported)
    finally:
        store.close()


def test_trigger_threshold_says_which_metric_it_judges(db):
    """driftline_trigger_threshold carries the trigger's metric, so a dashboard draws the precision line of a
    trigger whatever its name (the old name regex never matched a trigger called e.g. `ppv_floor`)."""
    path, config, store = db
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["triggers"].append({"name": "ppv_floor", "metric": "precision", "op": "<", "value": 0.2, "window": "7d"})
    col = SnapshotCollector(store, from_dict(raw), clock=lambda: END)
    reg = CollectorRegistry()
    reg.register(col)
    s = _samples(generate_latest(reg).decode())
    lines = {(dict(k)["trigger"], dict(k).get("metric")) for (n, k), v in s.items()
             if n == "driftline_trigger_threshold"}
    assert lines == {("recall_below_target", "recall"), ("fpr_above_target", "fpr"), ("ppv_floor", "precision")}


def test_head_requests_get_the_status_and_headers_of_get_without_a_body(service):
    """User tryout: `HEAD /metrics` answered 501 (load balancers and uptime checks probe with HEAD)."""
    for path, code in (("/metrics", 200), ("/healthz", 200), ("/readyz", 200), ("/nope", 404)):
        req = urllib.request.Request(service.url + path, method="HEAD")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                got, length, body = r.status, int(r.headers["Content-Length"]), r.read()
        except urllib.error.HTTPError as err:
            got, length, body = err.code, int(err.headers["Content-Length"]), err.read()
        assert (got, body) == (code, b"") and length > 0
        assert length == len(_get(service.url + path)[2].encode()) or path == "/metrics"  # scrapes move


def test_rate_help_texts_keep_their_capitals(db):
    """HELP of the rate series read 'Tp / (tp + fn)' and '1 - fpr': str.capitalize lowered every other letter."""
    path, config, store = db
    docs = {m.name: m.documentation for m in SnapshotCollector(store, config, clock=lambda: END).collect()}
    assert docs["driftline_recall_ratio"] == "TP / (TP + FN): share of labelled positives the model flagged."
    assert docs["driftline_fpr_ratio"].startswith("FP / (FP + TN): ")
    assert docs["driftline_specificity_ratio"] == "TN / (TN + FP) = 1 - FPR."
    assert docs["driftline_alert_rate_ratio"] == "Flagged / all predictions (labelled or not)."
