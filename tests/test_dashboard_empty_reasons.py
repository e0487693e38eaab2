"""A panel that is empty on a healthy deployment says why (README, Deployment: "No panel is silently empty").
Found scraping a fresh `driftline serve` with a real Prometheus: every Drift panel read "No data" until someone ran
`driftline reference set` (the compose stack and the Kubernetes manifests never do), and the Pipeline's
dead-letter ratio time series read "No data" while its stat beside it said "idle"."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DASHBOARDS = sorted((REPO / "deploy" / "grafana" / "dashboards").glob("*.json"))
# series absent without an active drift reference (docs/METRICS.md: Drift, Multivariate drift, Label-free estimates)
NEEDS_REFERENCE = re.compile(r"\bdriftline_(feature_\w+|score_psi|multivariate_drift_\w+|estimated_\w+)\b")
IDLE_ABSENT = re.compile(r"\bjob:driftline_dead_letters:ratio_rate10m\b")  # recorded only while messages flow


def _panels() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in DASHBOARDS:
        for p in json.loads(path.read_text())["panels"]:
            out.extend((path.name, q) for q in (p.get("panels", []) if p["type"] == "row" else [p]))
    return out


def _no_value(panel: dict[str, Any]) -> str:
    return panel["fieldConfig"]["defaults"].get("noValue", "")


def test_panels_reading_reference_series_say_a_reference_is_missing() -> None:
    seen = 0
    for name, panel in _panels():
        if any(NEEDS_REFERENCE.search(t["expr"]) for t in panel["targets"]):
            seen += 1
            assert "driftline reference set" in _no_value(panel), (name, panel["title"])
    assert seen >= 5


def test_panels_reading_the_dead_letter_ratio_say_idle() -> None:
    seen = 0
    for name, panel in _panels():
        if any(IDLE_ABSENT.search(t["expr"]) for t in panel["targets"]):
            seen += 1
            assert _no_value(panel).startswith("idle"), (name, panel["title"])
    assert seen == 2
