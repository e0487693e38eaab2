"""A dashboard panel left blank by an absent readout points to a panel that says why (on-call tryout: after an
upgrade whose reference predated labels and feature samples, the label-free estimates and multivariate drift were
absent from /metrics and nothing on a dashboard said why, while the CLI did). Each panel reading
driftline_estimated_* or driftline_multivariate_drift_* names, in its noValue, a table of the same dashboard that
reads driftline_readout_unavailable for that readout and maps every reason code to words."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from driftline.readouts.absent import REASONS

DASHBOARDS = sorted((Path(__file__).resolve().parents[1] / "deploy" / "grafana" / "dashboards").glob("*.json"))
READS = {"estimated": re.compile(r"\bdriftline_estimated_\w+"),
         "multivariate": re.compile(r"\bdriftline_multivariate_drift_\w+")}


def _panels(path: Path) -> list[dict[str, Any]]:
    out = []
    for p in json.loads(path.read_text())["panels"]:
        out.extend(p.get("panels", []) if p["type"] == "row" else [p])
    return out


def test_panels_of_an_absent_readout_point_to_its_reason() -> None:
    seen = set()
    for path in DASHBOARDS:
        panels = _panels(path)
        titles = {p["title"]: p for p in panels}
        for p in panels:
            for readout, pattern in READS.items():
                if not any(pattern.search(t["expr"]) for t in p["targets"]):
                    continue
                seen.add(readout)
                no_value = p["fieldConfig"]["defaults"].get("noValue", "")
                named = re.search(r"see '([^']+)'", no_value)
                assert named and named.group(1) in titles, (path.name, p["title"], no_value)
                why = titles[named.group(1)]
                assert any(f'readout="{readout}"' in t["expr"] and "driftline_readout_unavailable" in t["expr"]
                           for t in why["targets"]), (path.name, why["title"])
                mapped = [o for o in why["fieldConfig"]["overrides"] if o["matcher"]["options"] == "reason"]
                words = mapped[0]["properties"][-1]["value"][0]["options"]
                assert set(words) == set(REASONS), (path.name, why["title"])
    assert seen == set(READS)
