"""On-call (issue 16 parts 2-3): a one-shot `driftline alerts evaluate` never lets a firing alert resolve by
itself in a real Alertmanager and links nowhere dead; every alert carries an absolute runbook URL whose section
exists in docs/RUNBOOKS.md."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from am_fixtures import Alertmanager, alertmanager_sink  # noqa: F401 - fixture
from driftline.config import DEFAULT_RUNBOOK_BASE_URL, ConfigError, Notify, from_dict
from driftline.triggers.model import Observation, Rule, evaluate
from driftline.triggers.notify import Notifier
from driftline.triggers.rules import render_rules, to_yaml
from helpers import outcome, pred

REPO = Path(__file__).resolve().parents[1]
RUNBOOKS = REPO / "docs" / "RUNBOOKS.md"
RULE_FILES = sorted((REPO / "alerts").glob("*.yml"))
ALERT = "RecallBelowTarget"


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _cli(cfg: Path, db: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "driftline.cli", "--config", str(cfg), "--db", f"sqlite:///{db}", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done


def _events(path: Path, prefix: str, caught: int, missed: int, at: float) -> None:
    """Labelled frauds: `caught` flagged (score 0.9) and `missed` unflagged (score 0.1), an hour before `at`."""
    lines = []
    for i in range(caught + missed):
        pid = f"{prefix}-{i}"
        lines += [pred(pid, 0.9 if i < caught else 0.1, at - 3600), outcome(pid, 1, at - 1800)]
    path.write_bytes(b"\n".join(lines) + b"\n")


def test_one_shot_evaluate_keeps_a_firing_alert_until_an_evaluation_resolves_it(tmp_path, alertmanager_sink):
    """Issue 16.2: `alerts evaluate` (no serve) sent endsAt = now + 300 s, so Alertmanager resolved the alert by
    itself 5 minutes later, and a generatorURL to 127.0.0.1:9108 where nothing listens."""
    am: Alertmanager = alertmanager_sink
    now = time.time()
    cfg = tmp_path / "driftline.yaml"
    cfg.write_text(yaml.safe_dump({
        "triggers": [{"name": "recall_below_target", "metric": "recall", "op": "<", "value": 0.7, "window": "1d",
                      "severity": "critical"}],
        "notify": {"alertmanager_url": am.url, "retries": 0}}))
    db = tmp_path / "d.db"
    _events(tmp_path / "low.jsonl", "low", caught=20, missed=30, at=now)     # recall 0.4 over 50 frauds
    _cli(cfg, db, "replay", str(tmp_path / "low.jsonl"))

    _cli(cfg, db, "alerts", "evaluate")
    (alert,) = am.alerts(ALERT)
    assert alert["status"]["state"] == "active"
    # Not a few minutes: it stays firing until an evaluation resolves it (nothing else will refresh it).
    assert _ts(alert["endsAt"]) > now + 30 * 86400, alert["endsAt"]  # (now: before the evaluation)
    assert not alert.get("generatorURL"), f"links to {alert.get('generatorURL')!r}, where nothing listens"
    assert alert["annotations"]["runbook_url"] == f"{DEFAULT_RUNBOOK_BASE_URL}#recallbelowtarget"

    _cli(cfg, db, "alerts", "evaluate")  # still firing: still one active alert
    (alert,) = am.alerts(ALERT)
    assert alert["status"]["state"] == "active"

    _events(tmp_path / "good.jsonl", "good", caught=200, missed=0, at=now)  # recall 220/250 = 0.88
    _cli(cfg, db, "replay", str(tmp_path / "good.jsonl"))
    _cli(cfg, db, "alerts", "evaluate")
    assert am.alerts(ALERT) == []  # resolved by the evaluation that saw it clear
    deadline = time.monotonic() + 20
    while not any(p["status"] == "resolved" for p in am.sink.of(ALERT)) and time.monotonic() < deadline:
        time.sleep(0.2)
    statuses = [p["status"] for p in am.sink.of(ALERT)]
    assert statuses.count("resolved") == 1 and statuses[0] == "firing", statuses
    assert len({p["groupKey"] for p in am.sink.of(ALERT)}) == 1


def test_one_shot_generator_url_is_the_configured_one(tmp_path):
    """With notify.generator_url set, a one-shot evaluation links there; the service links to its /triggers."""
    rule = Rule("recall_below_target", "recall", "<", 0.7, severity="critical")
    fire = evaluate(rule, None, Observation(0.4, 0.3, 0.5, 50), 1000.0)
    one_shot = Notifier(Notify(generator_url="https://driftline.example/triggers"), "fraud", refresh_s=None)
    assert one_shot.alert(rule, fire.state, "firing", 1000.0, None)["generatorURL"] == \
        "https://driftline.example/triggers"
    served = Notifier(Notify(), "fraud", generator_url="http://10.0.0.5:9108/triggers", clock=lambda: 1000.0)
    a = served.alert(rule, fire.state, "firing", 1000.0, None)
    assert a["generatorURL"] == "http://10.0.0.5:9108/triggers"
    assert _ts(a["endsAt"]) == pytest.approx(1300.0)  # a running evaluator refreshes: expires if it stops


def _anchors() -> set[str]:
    """GitHub anchors of the RUNBOOKS.md alert sections (`## AlertName`)."""
    return {h.lower() for h in re.findall(r"^## (\w+)\s*$", RUNBOOKS.read_text(), flags=re.M)}


def _sections() -> dict[str, str]:
    parts = re.split(r"^## (\w+)\s*$", RUNBOOKS.read_text(), flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_every_alert_in_the_rule_files_links_to_its_runbook_section():
    """Any alert in alerts/*.yml (hand-written or rendered, now or added later) has an absolute runbook_url under
    the default base whose anchor is its name, and RUNBOOKS.md has that section."""
    anchors = _anchors()
    seen = 0
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text()).get("groups", []):
            for rule in group.get("rules") or []:
                if "alert" not in rule:
                    continue
                seen += 1
                url = rule["annotations"]["runbook_url"]
                assert url == f"{DEFAULT_RUNBOOK_BASE_URL}#{rule['alert'].lower()}", (path.name, rule["alert"], url)
                assert rule["alert"].lower() in anchors, f"docs/RUNBOOKS.md has no section ## {rule['alert']}"
    assert seen >= 9


def test_every_runbook_section_says_what_it_means_what_to_check_and_how_to_silence():
    sections = _sections()
    assert len(sections) >= 9
    for name, text in sections.items():
        for part in ("**What it means.**", "**Check first.**", "**Silence it safely.**"):
            assert part in text, f"{name}: missing {part}"
        assert "amtool silence add" in text, name


def test_runbook_base_url_is_configurable_and_absolute(tmp_path):
    base = "https://wiki.example.com/driftline/runbooks"
    cfg = from_dict({"notify": {"runbook_base_url": base},
                     "triggers": [{"name": "recall_below_target", "metric": "recall", "op": "<", "value": 0.7},
                                  {"name": "fpr_above_target", "metric": "fpr", "op": ">", "value": 0.08,
                                   "runbook_url": "https://x.example/fpr"}]})
    rendered = yaml.safe_load(to_yaml(render_rules(cfg)))["groups"][0]["rules"]
    assert [r["annotations"]["runbook_url"] for r in rendered] == [f"{base}#recallbelowtarget",
                                                                   "https://x.example/fpr"]
    rule = Rule("recall_below_target", "recall", "<", 0.7)
    fire = evaluate(rule, None, Observation(0.4, 0.3, 0.5, 50), 1000.0)
    n = Notifier(cfg.notify, "fraud")
    assert n.alert(rule, fire.state, "firing", 1000.0, None)["annotations"]["runbook_url"] == \
        f"{base}#recallbelowtarget"
    assert n.webhook_body([fire.notice])["notifications"][0]["runbook_url"] == f"{base}#recallbelowtarget"
    for bad, field in (({"notify": {"runbook_base_url": "docs/RUNBOOKS.md"}}, "notify.runbook_base_url"),
                       ({"triggers": [{"name": "t", "metric": "recall", "op": "<", "value": 0.7,
                                       "runbook_url": "docs/METRICS.md#t"}]}, "triggers[0].runbook_url")):
        with pytest.raises(ConfigError, match=re.escape(f"`{field}`")):
            from_dict(bad)


def test_with_alertmanager_url_driftline_is_the_only_sender_of_trigger_alerts(tmp_path, capsys):
    """Issue 16.1: the notifier and the rendered rule both paged for one condition (different label sets, so
    Alertmanager kept two groups). With notify.alertmanager_url set no alerting rule is rendered for triggers."""
    triggers = [{"name": "recall_below_target", "metric": "recall", "op": "<", "value": 0.7, "severity": "critical"}]
    prometheus_sends = render_rules(from_dict({"triggers": triggers}))
    assert [a.alert for a in prometheus_sends.alerts] == [ALERT] and prometheus_sends.sender is None
    driftline_sends = render_rules(from_dict({"triggers": triggers, "notify": {"alertmanager_url": "http://am:9093"}}))
    assert driftline_sends.alerts == []
    text = to_yaml(driftline_sends)
    assert yaml.safe_load(text)["groups"][0]["rules"] == []
    assert "notify.alertmanager_url is set" in text
    # on-call tryout: the note sat between the header's "do not edit by hand;" and the rest of its sentence
    head = text.splitlines()
    assert head[0].endswith("do not edit by hand;") and head[1].startswith("# change the triggers in the config")
    assert head[4].startswith("# notify.alertmanager_url is set") and head[5] == "groups:"
