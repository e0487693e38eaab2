"""Notifications: Alertmanager v2 and webhook payloads against a local HTTP receiver started by the test,
retries with backoff after 500s, the failure/success counters, no-receiver logging, and an end-to-end
round trip through a real Alertmanager (Debian's prometheus-alertmanager) when it is installed."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import urllib.request
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from am_fixtures import start_alertmanager

from driftline.analysis.rates import rate
from driftline.config import Notify
from driftline.ops import OpsMetrics
from driftline.triggers.notify import ALERTMANAGER, WEBHOOK, Notifier
from driftline.triggers.model import Observation, Rule, evaluate, replay

from services import require_binary

RULE = Rule(name="recall_below_target", metric="recall", op="<", value=0.70, min_n=30, severity="critical",
            cooldown_s=3600.0, runbook_url="https://runbooks.example/recall")
T0 = 1_796_083_200.0  # 2026-12-01T00:00:00Z


def _obs(k: int, n: int) -> Observation:
    r = rate(k, n)
    return Observation(r.value, r.low, r.high, r.n)


class Receiver:
    """A local HTTP receiver answering each POST with the next scripted status (then 200)."""

    def __init__(self, codes: list[int] | None = None) -> None:
        self.codes = list(codes or [])
        self.requests: list[tuple[str, dict[str, str], object]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.requests.append((self.path, dict(self.headers), json.loads(body)))
                code = outer.codes.pop(0) if outer.codes else 200
                self.send_response(code)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *a: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def _sample(ops: OpsMetrics, name: str, receiver: str) -> float:
    v = ops.registry.get_sample_value(name, {"receiver": receiver})
    return 0.0 if v is None else v


def _firing_then_resolved():
    return replay(RULE, [(T0, _obs(40, 80)), (T0 + 600, _obs(70, 80))])


def test_alertmanager_payload_for_firing_and_resolve(receiver):
    ops = OpsMetrics()
    n = Notifier(Notify(alertmanager_url=receiver.url + "/"), "fraud", ops=ops, clock=lambda: T0 + 30,
                 generator_url="http://127.0.0.1:9108/triggers", refresh_s=300)
    fire, resolve = _firing_then_resolved()
    out = n.notify([fire.notice], [(RULE, fire.state)])
    assert [(d.receiver, d.ok, d.attempts, d.status) for d in out] == [(ALERTMANAGER, True, 1, 200)]
    path, headers, body = receiver.requests[0]
    assert path == "/api/v2/alerts" and headers["Content-Type"] == "application/json"
    assert len(body) == 1  # the firing trigger is not sent twice
    a = body[0]
    assert a["labels"] == {"alertname": "RecallBelowTarget", "severity": "critical", "model": "fraud",
                           "trigger": "recall_below_target"}
    assert a["startsAt"] == "2026-12-01T00:00:00Z" and a["endsAt"] == "2026-12-01T00:05:30Z"
    assert a["generatorURL"] == "http://127.0.0.1:9108/triggers"
    assert a["annotations"]["runbook_url"] == "https://runbooks.example/recall"
    # one number rule (numbers.py): a rate as a 3-place proportion, the line as agreed (issue 17 §3)
    assert a["annotations"]["summary"] == "recall of fraud is 0.500 over 7d (line < 0.70)"
    assert "95 % interval [0.393, 0.607], n = 80" in a["annotations"]["description"]
    n.notify([resolve.notice], [])
    r = receiver.requests[1][2][0]
    assert (r["startsAt"], r["endsAt"]) == ("2026-12-01T00:00:00Z", "2026-12-01T00:10:00Z")
    assert r["annotations"]["summary"].startswith("Resolved: recall of fraud is 0.875")
    assert _sample(ops, "driftline_notifications_sent_total", ALERTMANAGER) == 2
    assert _sample(ops, "driftline_notifications_failed_total", ALERTMANAGER) == 0


def test_still_firing_triggers_are_refreshed_in_alertmanager_but_not_sent_to_the_webhook(receiver):
    n = Notifier(Notify(alertmanager_url=receiver.url, webhook_url=receiver.url + "/hook"), "fraud",
                 clock=lambda: T0 + 120)
    fire = evaluate(RULE, None, _obs(40, 80), T0)
    still = evaluate(RULE, fire.state, _obs(40, 80), T0 + 60)
    assert still.notice is None
    out = n.notify([], [(RULE, still.state)])
    assert [d.receiver for d in out] == [ALERTMANAGER]
    assert receiver.requests[0][2][0]["startsAt"] == "2026-12-01T00:00:00Z"


def test_webhook_body_carries_the_evidence(receiver):
    n = Notifier(Notify(webhook_url=receiver.url + "/hook"), "fraud")
    fire, _ = _firing_then_resolved()
    (d,) = n.notify([fire.notice])
    assert d.ok and receiver.requests[0][0] == "/hook"
    body = receiver.requests[0][2]
    assert body["source"] == "driftline" and body["model"] == "fraud"
    (item,) = body["notifications"]
    r = rate(40, 80)
    assert item["kind"] == "firing" and item["status"] == "firing" and item["state"] == "firing"
    assert (item["value"], item["low"], item["high"], item["n"]) == (r.value, r.low, r.high, 80)
    assert (item["metric"], item["op"], item["threshold"], item["window"]) == ("recall", "<", 0.7, "7d")
    assert item["alertname"] == "RecallBelowTarget" and item["starts_at"] == "2026-12-01T00:00:00Z"
    assert body["labels"] == {}


def test_webhook_body_carries_the_static_notify_labels(receiver):
    """On-call tryout: notify.labels told two deployments of one model apart in Alertmanager, but the webhook body
    had no trace of them, so a webhook receiver could not say which deployment paged."""
    n = Notifier(Notify(webhook_url=receiver.url + "/hook", labels={"cluster": "eu", "job": "driftline"}), "fraud")
    fire, _ = _firing_then_resolved()
    (d,) = n.notify([fire.notice])
    assert d.ok and receiver.requests[0][2]["labels"] == {"cluster": "eu", "job": "driftline"}


def test_retries_after_500s_with_exponential_backoff_and_counts_each_failure():
    rec = Receiver([500, 503])
    try:
        ops, sleeps = OpsMetrics(), []
        n = Notifier(Notify(webhook_url=rec.url, retries=3, backoff="2s"), "fraud", ops=ops, sleep=sleeps.append)
        fire, _ = _firing_then_resolved()
        (d,) = n.notify([fire.notice])
        assert (d.ok, d.attempts, d.status) == (True, 3, 200)
        assert sleeps == [2.0, 4.0] and len(rec.requests) == 3
        assert _sample(ops, "driftline_notifications_failed_total", WEBHOOK) == 2
        assert _sample(ops, "driftline_notifications_sent_total", WEBHOOK) == 1
    finally:
        rec.close()


def test_gives_up_after_the_retries_and_a_4xx_is_not_retried(caplog):
    rec = Receiver([500, 500, 500, 400])
    try:
        ops, sleeps = OpsMetrics(), []
        n = Notifier(Notify(alertmanager_url=rec.url, retries=2, backoff="1s"), "fraud", ops=ops,
                     sleep=sleeps.append)
        fire, _ = _firing_then_resolved()
        with caplog.at_level(logging.WARNING, logger="driftline.triggers.notify"):
            (d,) = n.notify([fire.notice])
        assert (d.ok, d.attempts, d.status) == (False, 3, 500) and sleeps == [1.0, 2.0]
        assert _sample(ops, "driftline_notifications_failed_total", ALERTMANAGER) == 3
        assert _sample(ops, "driftline_notifications_sent_total", ALERTMANAGER) == 0
        assert "giving up notifying alertmanager after 3 attempt(s)" in caplog.text
        (d2,) = n.notify([fire.notice])
        assert (d2.ok, d2.attempts, d2.status) == (False, 1, 400) and sleeps == [1.0, 2.0]
        assert _sample(ops, "driftline_notifications_failed_total", ALERTMANAGER) == 4
    finally:
        rec.close()


def test_unreachable_receiver_is_a_counted_failure():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ops = OpsMetrics()
    n = Notifier(Notify(webhook_url=f"http://127.0.0.1:{port}/x", retries=1, timeout="1s"), "fraud", ops=ops,
                 sleep=lambda s: None)
    fire, _ = _firing_then_resolved()
    (d,) = n.notify([fire.notice])
    assert not d.ok and d.status is None and "URLError" in (d.error or "")
    assert _sample(ops, "driftline_notifications_failed_total", WEBHOOK) == 2


def test_without_receivers_notices_are_logged_only(caplog):
    ops = OpsMetrics()
    n = Notifier(Notify(), "fraud", ops=ops)
    assert n.receivers == []
    fire, resolve = _firing_then_resolved()
    with caplog.at_level(logging.INFO, logger="driftline.triggers.notify"):
        assert n.notify([fire.notice, resolve.notice]) == []
    assert "trigger recall_below_target firing: recall of fraud is 0.500 over 7d (line < 0.70)" in caplog.text
    assert "trigger recall_below_target resolved" in caplog.text
    assert ops.registry.get_sample_value("driftline_notifications_sent_total", {"receiver": WEBHOOK}) is None


# --- a real Alertmanager ---------------------------------------------------------------------------
@pytest.fixture
def alertmanager(tmp_path):
    binary = require_binary("prometheus-alertmanager")
    (tmp_path / "am.yml").write_text('route:\n  receiver: "null"\nreceivers:\n  - name: "null"\n')
    proc, url = start_alertmanager(binary, tmp_path / "am.yml", tmp_path / "data", tmp_path / "alertmanager.log")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def test_end_to_end_with_a_real_alertmanager(alertmanager):
    ops = OpsMetrics()
    now = time.time()
    n = Notifier(Notify(alertmanager_url=alertmanager), "fraud", ops=ops, clock=lambda: now)
    fire = evaluate(RULE, None, _obs(40, 80), now - 60)
    (d,) = n.notify([fire.notice], [(RULE, fire.state)])
    assert d.ok and d.status == 200
    with urllib.request.urlopen(alertmanager + '/api/v2/alerts?filter=alertname%3D%22RecallBelowTarget%22') as r:
        alerts = json.loads(r.read())
    assert len(alerts) == 1
    a = alerts[0]
    assert a["labels"] == {"alertname": "RecallBelowTarget", "severity": "critical", "model": "fraud",
                           "trigger": "recall_below_target"}
    assert a["status"]["state"] == "active"
    assert datetime.fromisoformat(a["startsAt"].replace("Z", "+00:00")).timestamp() == pytest.approx(now - 60, abs=1)
    assert a["annotations"]["runbook_url"] == "https://runbooks.example/recall"
    resolve = evaluate(RULE, fire.state, _obs(70, 80), now - 1)
    assert resolve.notice.kind == "resolved"
    (d2,) = n.notify([resolve.notice], [])
    assert d2.ok
    with urllib.request.urlopen(alertmanager + "/api/v2/alerts") as r:
        assert json.loads(r.read()) == []  # resolved: no longer active
    assert _sample(ops, "driftline_notifications_sent_total", ALERTMANAGER) == 2


def test_two_deployments_with_their_own_labels_keep_their_own_pages_in_a_real_alertmanager(alertmanager):
    """On-call tryout: two deployments (eu, us) of model fraud notifying one Alertmanager sent the same label set,
    so Alertmanager held one RecallBelowTarget, and eu's recall recovering resolved it while us was at 0.375 (no
    page left). notify.labels tells them apart."""
    now = time.time()
    eu = Notifier(Notify(alertmanager_url=alertmanager, labels={"cluster": "eu", "job": "driftline"}), "fraud",
                  clock=lambda: now)
    us = Notifier(Notify(alertmanager_url=alertmanager, labels={"cluster": "us", "job": "driftline"}), "fraud",
                  clock=lambda: now)
    fire_eu, fire_us = evaluate(RULE, None, _obs(40, 80), now - 60), evaluate(RULE, None, _obs(30, 80), now - 60)
    assert eu.notify([fire_eu.notice], [(RULE, fire_eu.state)])[0].ok
    assert us.notify([fire_us.notice], [(RULE, fire_us.state)])[0].ok
    resolve_eu = evaluate(RULE, fire_eu.state, _obs(70, 80), now - 1)
    assert eu.notify([resolve_eu.notice], [])[0].ok
    with urllib.request.urlopen(alertmanager + "/api/v2/alerts") as r:
        active = json.loads(r.read())
    assert [a["labels"] for a in active] == [{"alertname": "RecallBelowTarget", "severity": "critical",
                                              "model": "fraud", "trigger": "recall_below_target",
                                              "cluster": "us", "job": "driftline"}]
    assert active[0]["annotations"]["summary"] == "recall of fraud is 0.375 over 7d (line < 0.70)"


@pytest.mark.parametrize("labels, problem", [
    ({"model": "other"}, "set by driftline itself"), ({"alertname": "X"}, "set by driftline itself"),
    ({"__name__": "x"}, "not a Prometheus label name"), ({"bad-name": "x"}, "not a Prometheus label name"),
    ({"env": " "}, "empty value")])
def test_notify_labels_refuse_driftlines_own_names_invalid_names_and_empty_values(labels, problem):
    with pytest.raises(ValueError, match=problem):
        Notify(alertmanager_url="http://am:9093", labels=labels)


# --- a receiver URL that cannot work, and a history that says whether a page went out (SRE tryout) -------------
@pytest.mark.parametrize("field", ["alertmanager_url", "webhook_url"])
@pytest.mark.parametrize("url", ["alertmanager.monitoring.svc", "127.0.0.1:9093", "not a url", "ftp://am:9093",
                                 "http://", "http://am:9093/#x"])
def test_a_receiver_url_without_scheme_or_host_fails_at_start_naming_the_field(tmp_path, capsys, field, url):
    from driftline import cli
    from driftline.config import ConfigError, from_dict

    with pytest.raises(ConfigError, match=f"notify.{field}|{field}"):
        from_dict({"notify": {field: url}})
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({"notify": {field: url}}))
    assert cli.main(["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}", "alerts", "evaluate"]) == 2
    assert field in capsys.readouterr().err
    assert Notify(**{field: "http://alertmanager.monitoring.svc:9093"}) is not None


def test_a_url_urllib_cannot_open_is_a_counted_failure_not_a_crash():
    ops = OpsMetrics()
    n = Notifier(Notify(webhook_url="http://127.0.0.1:1/x", retries=2), "fraud", ops=ops, sleep=lambda s: None)
    d = n.post(WEBHOOK, "alertmanager.monitoring.svc/api/v2/alerts", {"notifications": []})  # what slipped through
    assert not d.ok and d.attempts == 1 and "ValueError" in (d.error or "")
    assert _sample(ops, "driftline_notifications_failed_total", WEBHOOK) == 1


def _stored_run(tmp_path, notify: dict):
    """An evaluation whose trigger fires at once (recall < 0.99 over the simulated stream), stored as a live pass
    would store it."""
    from driftline import cli
    from driftline.config import from_dict
    from driftline.storage.store import Store
    from driftline.triggers import runner

    tmp_path.mkdir()
    events = tmp_path / "e.jsonl"
    assert cli.main(["simulate", "--days", "2", "--per-day", "2000", "--seed", "3", "--out", str(events)]) == 0
    db = f"sqlite:///{tmp_path / 'd.db'}"
    assert cli.main(["--db", db, "replay", str(events)]) == 0
    config = from_dict({"notify": {**notify, "retries": 0, "timeout": "1s"},
                        "triggers": [{"name": "recall_low", "metric": "recall", "op": "<", "value": 0.99,
                                      "window": "2d", "min_n": 5, "severity": "critical"}]})
    store = Store(db)
    run = runner.run(store, config, time.time())
    assert [t.notified for t in run.transitions] == [True]  # a firing notice is due
    return store, config, run


def test_history_says_not_notified_when_every_receiver_refused_and_notified_when_one_took_it(tmp_path, receiver):
    from driftline.triggers import history
    from driftline.triggers.notify import deliver

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/hook"
    store, config, run = _stored_run(tmp_path / "a", {"webhook_url": dead})
    (d,) = deliver(Notifier(config.notify, "fraud", sleep=lambda s: None), store, run)
    assert not d.ok
    assert [h["notified"] for h in history.history(store, "fraud")] == [False]
    store, config, run = _stored_run(tmp_path / "b", {"webhook_url": dead, "alertmanager_url": receiver.url})
    out = deliver(Notifier(config.notify, "fraud", sleep=lambda s: None), store, run)
    assert sorted((x.receiver, x.ok) for x in out) == [(ALERTMANAGER, True), (WEBHOOK, False)]
    assert [h["notified"] for h in history.history(store, "fraud")] == [True]


def test_alerts_evaluate_with_every_receiver_down_stores_notified_false(tmp_path, capsys):
    """The one-shot path (second tryout: it crashed with AttributeError, exit 1, and the history said notified)."""
    from driftline import cli

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    events = tmp_path / "e.jsonl"
    assert cli.main(["simulate", "--days", "2", "--per-day", "2000", "--seed", "3", "--out", str(events)]) == 0
    db = f"sqlite:///{tmp_path / 'd.db'}"
    assert cli.main(["--db", db, "replay", str(events)]) == 0
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({"notify": {"alertmanager_url": dead, "retries": 0, "timeout": "1s"},
                               "triggers": [{"name": "recall_low", "metric": "recall", "op": "<", "value": 0.99,
                                             "window": "2d", "min_n": 5, "severity": "critical"}]}))
    capsys.readouterr()
    assert cli.main(["--config", str(cfg), "--db", db, "alerts", "evaluate", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert [t["state"]["state"] for t in run["triggers"]] == ["firing"]
    assert cli.main(["--config", str(cfg), "--db", db, "alerts", "--json"]) == 0
    assert [h["notified"] for h in json.loads(capsys.readouterr().out)["history"]] == [False]


def test_a_value_that_prints_as_its_line_gets_the_digits_that_tell_them_apart() -> None:
    """Tryout: 'recall … is 0.889 over 7d (line < 0.889)' for 0.8886 judged below 0.889 read as the opposite of
    what fired; the value is printed with as many more decimals as it takes to differ from the line."""
    from driftline.numbers import apart, prop
    from driftline.triggers.model import TriggerState
    from driftline.triggers.notify import summary

    rule = Rule(name="recall_low", metric="recall", op="<", value=0.889)
    state = TriggerState(trigger="recall_low", state="firing", since=0.0, updated_at=0.0, window="7d", value=0.8886,
                         low=None, high=None, judged=0.8886, n=500)
    assert "is 0.8886 over 7d (line < 0.889)" in summary(rule, "fraud", state, "firing")
    assert apart(prop(0.8886), 0.8886, 0.8889) == "0.8886"  # '0.889' would read as above a line of 0.8889
    assert apart(prop(0.61), 0.61, 0.7) == "0.610"  # already apart: unchanged
    assert apart(prop(0.7), 0.7, 0.7) == "0.700"  # equal: nothing to tell apart
    assert apart(prop(-0.0304), -0.0304, -0.03) == "\u22120.0304"
    assert apart(prop(0.123456789), 0.123456789, 0.123456788) == "0.12345679"  # at most 8 places
    assert apart("3h 20m", 12000.0, 12001.0) == "3h 20m" and apart("—", None, 0.5) == "—"
