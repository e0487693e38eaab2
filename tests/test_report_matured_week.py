"""A weekly report whose labels are still to come names the newest week whose labels have matured.

Churn tryout: outcomes arrive 30–60 days after the prediction, so every scheduled weekly report (the last complete
week) read "No headline metric can be judged yet: there are no labelled outcomes for this week", and nothing said
which week could be judged (`driftline report --week …`).
"""

from __future__ import annotations

import json
import math
import time

import yaml

from driftline import cli
from driftline.reports.weeks import parse_week, week_of

from helpers import outcome, pred

DAY = 86400.0
DELAY = 35 * DAY


def test_a_provisional_report_names_the_newest_matured_week(tmp_path, capsys) -> None:
    now = time.time()
    start = math.floor(now / DAY) * DAY - 70 * DAY
    lines = []
    for i in range(70 * 12):  # 70 days, a prediction every 2 hours; an outcome 35 days later once that has come
        ts = start + i * 7200
        lines.append(pred(f"c{i}", 0.2 + 0.5 * (i % 3 == 0), ts, model="churn"))
        if ts + DELAY < now - 3600:
            lines.append(outcome(f"c{i}", i % 2, ts + DELAY))
    lines.sort(key=lambda raw: json.loads(raw)["ts"])
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"model": "churn", "threshold": 0.3, "targets": {"recall": 0.6}}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*base, "replay", str(path), "--json"]) == 0
    capsys.readouterr()
    assert cli.main([*base, "report", "--out", str(tmp_path / "r"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["report"]
    lm = doc["label_maturity"]
    week = lm["matured_week"]
    assert week is not None and lm["provisional"]
    assert f"the newest week whose labels have matured is {week}: `driftline report --week {week}`" in lm["note"]
    assert doc["summary"] == ("No headline metric can be judged yet: there are no labelled outcomes for this week "
                              f"(the newest week whose labels have matured is {week}).")
    # the named week is judged on matured labels; the week after it is not yet
    assert cli.main([*base, "report", "--week", week, "--out", str(tmp_path / "r"), "--json"]) == 0
    named = json.loads(capsys.readouterr().out)["report"]
    assert not named["label_maturity"]["provisional"] and named["label_maturity"]["matured_week"] is None
    after = week_of(parse_week(week).end).label  # the next ISO week (2026-W53 is followed by 2027-W01, not W54)
    assert cli.main([*base, "report", "--week", after, "--out", str(tmp_path / "r"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["report"]["label_maturity"]["provisional"]
