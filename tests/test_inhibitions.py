"""The shipped Alertmanager inhibitions (deploy/alertmanager/alertmanager.yml) against a real Alertmanager: the
pipeline alerts are muted only when every exporter of the job is gone, never by one replica down (SRE tryout: one
crash-looping standby's DriftlineExporterDown muted DriftlineNoPredictions about the healthy leader)."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest

from am_fixtures import Alertmanager, alertmanager_sink  # noqa: F401 - fixture

PIPELINE = ("DriftlineNoPredictions", "DriftlineConsumerLagHigh")


def _post(am: Alertmanager, *alerts: dict[str, str]) -> None:
    body = json.dumps([{"labels": {"job": "driftline", "severity": "critical", **a}} for a in alerts]).encode()
    req = urllib.request.Request(f"{am.url}/api/v2/alerts", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200


def _inhibited_by(am: Alertmanager, name: str, timeout_s: float = 60.0, want: bool | None = None) -> list[Any]:
    """The inhibitedBy list of the alert `name`, once Alertmanager holds it (waits for `want` when given; a
    generous deadline: it only bounds how long a broken Alertmanager keeps the test waiting)."""
    deadline = time.monotonic() + timeout_s
    got = None
    while time.monotonic() < deadline:
        held = am.alerts(name)
        got = held[0]["status"]["inhibitedBy"] if held else None
        if got is not None and (want is None or bool(got) == want):
            return got
        time.sleep(0.2)
    if got is None:
        raise AssertionError(f"{name} never reached Alertmanager within {timeout_s:.0f}s")
    return got


@pytest.mark.parametrize("source", [{"alertname": "DriftlineExporterDown", "instance": "driftline-1:9108"},
                                    {"alertname": "DriftlineDatabaseUnreachable"}])
def test_one_replica_down_does_not_mute_the_pipeline_alerts_of_its_job(alertmanager_sink: Alertmanager,
                                                                        source: dict[str, str]) -> None:
    """One replica's exporter down, or one replica without its database (review of 398b6fb: a standby with a wrong
    database URL was an inhibit source, so it muted DriftlineNoPredictions about the healthy leader)."""
    am = alertmanager_sink
    _post(am, source, *({"alertname": name} for name in PIPELINE))
    time.sleep(1.0)  # inhibitions apply as soon as the source is held: give them the chance to show
    for name in PIPELINE:
        assert _inhibited_by(am, name) == [], name


def test_every_exporter_of_the_job_down_mutes_the_pipeline_alerts_and_the_per_instance_pages(
        alertmanager_sink: Alertmanager) -> None:
    am = alertmanager_sink
    _post(am, {"alertname": "DriftlineExportersAllDown"},
          {"alertname": "DriftlineExporterDown", "instance": "driftline-0:9108"},
          *({"alertname": name} for name in PIPELINE))
    for name in (*PIPELINE, "DriftlineExporterDown"):
        assert _inhibited_by(am, name, want=True), name
    _post(am, {"alertname": "DriftlineNoPredictions", "job": "other"})  # another job is not muted
    held = [a for a in am.alerts("DriftlineNoPredictions") if a["labels"]["job"] == "other"]
    assert held and held[0]["status"]["inhibitedBy"] == []


def test_every_replica_without_its_database_mutes_the_pipeline_alerts_and_the_replica_page(
        alertmanager_sink: Alertmanager) -> None:
    am = alertmanager_sink
    _post(am, {"alertname": "DriftlineDatabaseUnreachableAll"}, {"alertname": "DriftlineDatabaseUnreachable"},
          *({"alertname": name} for name in PIPELINE))
    for name in (*PIPELINE, "DriftlineDatabaseUnreachable"):
        assert _inhibited_by(am, name, want=True), name
    _post(am, {"alertname": "DriftlineNoPredictions", "job": "other"})  # another job is not muted
    held = [a for a in am.alerts("DriftlineNoPredictions") if a["labels"]["job"] == "other"]
    assert held and held[0]["status"]["inhibitedBy"] == []
