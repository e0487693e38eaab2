"""The compose stack as a whole (issue 16 part 6): docker-compose.yml validated against the Compose Specification
JSON schema (vendored in tests/data/compose-spec), Alertmanager's receivers are services of the stack that really
accept notifications, driftline's own notifier is wired, and the image's build context is small."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "tests" / "data" / "compose-spec" / "compose-spec.json"
RECEIVER = ROOT / "deploy" / "alert-receiver" / "receiver.py"


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _compose() -> dict[str, Any]:
    return _yaml(ROOT / "docker-compose.yml")


def test_compose_file_is_valid_against_the_compose_specification_schema() -> None:
    """docker-compose.yml validates against the Compose Specification schema; a misspelt key would not."""
    validator = jsonschema.Draft7Validator(json.loads(SCHEMA.read_text()))
    compose = _compose()
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(compose)]
    assert errors == []
    compose["services"]["driftline"]["healthcheck"]["intervall"] = "15s"   # the schema does catch typos
    assert any("intervall" in e.message for e in validator.iter_errors(compose))


def test_alertmanager_receivers_are_services_of_the_stack() -> None:
    """Every webhook URL of alertmanager.yml names a compose service (not 127.0.0.1, which inside the Alertmanager
    container is Alertmanager itself) that exposes that port; Alertmanager starts after it is healthy."""
    services = _compose()["services"]
    am = _yaml(ROOT / "deploy" / "alertmanager" / "alertmanager.yml")
    urls = [w["url"] for r in am["receivers"] for w in r.get("webhook_configs", [])]
    assert urls
    for url in urls:
        u = urlsplit(url)
        assert u.hostname in services, url
        exposed = {int(str(p).split(":")[-1]) for p in services[u.hostname].get("expose", [])}
        assert u.port in exposed, url
        assert services["alertmanager"]["depends_on"][u.hostname] == {"condition": "service_healthy"}


def test_the_stack_has_one_sender_per_trigger_alert() -> None:
    """One condition pages once (README, On-call): the config mounted into the stack is the example apart from
    `notify:`, and either driftline's notifier sends trigger alerts (alertmanager_url set) or the rules Prometheus
    loads from ./alerts do — never both; the rules' sender, Prometheus, is wired to the stack's Alertmanager."""
    services = _compose()["services"]
    mounted = {dst: src for src, dst, *_ in (v.split(":") for v in services["driftline"]["volumes"])}
    config_path = ROOT / mounted[services["driftline"]["environment"]["DRIFTLINE_CONFIG"]]
    stack, example = _yaml(config_path), _yaml(ROOT / "driftline.example.yaml")
    assert {k: v for k, v in stack.items() if k != "notify"} == {k: v for k, v in example.items() if k != "notify"}
    from driftline.config import load
    notifier_sends = load(config_path).notify.alertmanager_url is not None
    rules_send = any("alert" in r for g in _yaml(ROOT / "alerts" / "triggers.rules.yml")["groups"] for r in g["rules"])
    assert notifier_sends != rules_send, (notifier_sends, rules_send)
    prometheus = _yaml(ROOT / "deploy" / "prometheus" / "prometheus.yml")
    targets = [t for a in prometheus["alerting"]["alertmanagers"] for c in a["static_configs"] for t in c["targets"]]
    assert any(urlsplit("//" + t).hostname == "alertmanager" for t in targets) and "alertmanager" in services


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_alert_receiver_accepts_an_alertmanager_notification_and_prints_it() -> None:
    """The stack's receiver answers 200 to an Alertmanager v4 webhook payload and prints one JSON line with the
    route, the alert names and the whole body; a non-JSON body is refused with 400."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(RECEIVER), "--port", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert "listening" in proc.stdout.readline()
        payload = {"version": "4", "status": "firing", "receiver": "driftline-critical", "alerts": [
            {"status": "firing", "labels": {"alertname": "RecallBelowTarget", "severity": "critical"},
             "annotations": {"summary": "Recall of fraud is 58.8%"}}]}
        req = urllib.request.Request(f"http://127.0.0.1:{port}/alerts/critical", data=json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200
        line = json.loads(proc.stdout.readline())
        assert line["path"] == "/alerts/critical" and line["body"] == payload
        assert line["alerts"] == [{"alertname": "RecallBelowTarget", "status": "firing", "severity": "critical"}]
        bad = urllib.request.Request(f"http://127.0.0.1:{port}/alerts", data=b"{nope", method="POST")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(bad, timeout=10)
        assert err.value.code == 400
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
            assert r.status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_dockerignore_keeps_the_build_context_small() -> None:
    """The build context excludes the virtualenv, git history and databases; what the Dockerfile copies stays in."""
    patterns = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
                if ln.strip() and not ln.startswith("#")]
    assert {".git", ".venv", "*.db"} <= set(patterns)
    assert not {"src", "pyproject.toml", "README.md"} & set(patterns)


def test_readme_states_the_compose_version() -> None:
    """The top-level `name:` and `service_completed_successfully` need Compose v2; the README says which."""
    assert "name" in _compose()
    assert "Compose v2.20" in (ROOT / "README.md").read_text()
