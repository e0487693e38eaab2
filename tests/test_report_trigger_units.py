"""The weekly report's trigger table writes each line and value as `driftline alerts` does, by the metric's unit.

Churn tryout: the report wrote `label_delay_p95 > 1.2096e+06` and a value of `1084094.738` (seconds) where
`alerts` says `> 14 d` and `12.5 d`; `drifted > 0.00` and `2.000` where `alerts` says `> 0` and `2` (a count of
features, README *False alarms*); a PSI with 3 places (`0.230`) where statistics have 4; and the Markdown left out
which feature a `psi` trigger watches (`psi > 0.20`)."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from driftline.commands.alerts import value_of
from driftline.config import from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.reports.data import report_document
from driftline.reports.plots import all_plots
from driftline.reports.render import render_html, render_markdown
from driftline.reports.weeks import week_of
from driftline.storage.store import Store
from helpers import seed000_events

DAY = 86400.0
START = datetime(2025, 6, 2, tzinfo=timezone.utc).timestamp()  # Monday of 2025-W23
TRIGGERS: list[dict[str, Any]] = [
    {"name": "labels_slow", "metric": "label_delay_p95", "op": ">", "value": 14 * DAY, "window": "7d", "min_n": 1},
    {"name": "inputs_drifted", "metric": "drifted", "op": ">", "value": 0, "window": "7d", "min_n": 1},
    {"name": "amount_psi", "metric": "psi", "feature": "amount", "op": ">", "value": 0.2, "window": "7d",
     "min_n": 1},
    {"name": "feed_silent", "metric": "silence_seconds", "op": ">", "value": 7200, "window": "7d", "min_n": 0},
    {"name": "recall_low", "metric": "recall", "op": "<", "value": 0.7, "window": "7d", "min_n": 1},
]


def _rows(text: str, names: list[str]) -> dict[str, str]:
    """Each trigger's row of the table (a Markdown line, or an HTML <tr>), its tags and escapes taken out."""
    chunks = re.findall(r"(?s)<tr>.*?</tr>", text) or text.splitlines()
    rows = {}
    for n in names:
        for c in chunks:
            plain = re.sub(r"<wbr>", "", c)
            plain = re.sub(r"<[^>]+>", " | ", plain).replace("\\_", "_").replace("&gt;", ">").replace("&lt;", "<")
            cells = [x.strip() for x in plain.split("|") if x.strip()]
            if cells and cells[0] == n:
                rows[n] = " ".join(" ".join(cells).split())
                break
        assert n in rows, n
    return rows


def test_trigger_lines_and_values_read_as_in_alerts(tmp_path: Path) -> None:
    config = from_dict({"model": "churn", "triggers": TRIGGERS})
    url = f"sqlite:///{tmp_path / 'w.db'}"
    store = Store(url)
    store.migrate()
    enc = msgspec.json.Encoder()
    recs = [RawRecord("t", 0, i, enc.encode(e)) for i, e in enumerate(seed000_events(START, "churn"))]
    Pipeline(config, store, clock=lambda: START + 30 * DAY).process_batch(recs)
    doc = report_document(store, config, "churn", week_of(START), START + 30 * DAY)
    judged = {t["name"]: t["at_week_end"]["value"] for t in doc["headline"]["triggers"]}
    assert judged["labels_slow"] is not None and judged["labels_slow"] > 100  # seconds
    names = [t["name"] for t in TRIGGERS]
    for text in (render_markdown(doc), render_html(doc, all_plots(doc))):
        rows = _rows(text, names)
        assert "label_delay_p95 > 14 d over 7d" in rows["labels_slow"], rows["labels_slow"]
        assert f" {value_of('label_delay_p95', judged['labels_slow'])} " in rows["labels_slow"] + " "
        assert re.search(r" \d+(\.\d)? (d|h|min|s) ", rows["labels_slow"] + " "), rows["labels_slow"]
        assert "drifted > 0 over 7d" in rows["inputs_drifted"], rows["inputs_drifted"]
        assert f" {value_of('drifted', judged['inputs_drifted'])} " in rows["inputs_drifted"] + " "
        assert "psi[amount] > 0.20 over 7d" in rows["amount_psi"], rows["amount_psi"]
        assert re.search(r" \d\.\d{4} ", rows["amount_psi"] + " ") or judged["amount_psi"] is None
        assert "silence_seconds > 2 h over 7d" in rows["feed_silent"], rows["feed_silent"]
        assert "recall < 0.70 over 7d" in rows["recall_low"] and re.search(r" 0\.\d{3} \[", rows["recall_low"])
    store.close()
