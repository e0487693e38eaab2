"""One maturity rule everywhere: `--matured`, calibration's "Estimated vs realised" look-back and the weekly
report's `matures_at` all wait for the top of the delay bin holding the p95 (readouts.maturity.maturity_wait),
never the bin's middle. A verification tryout found calibration and the report still on the middle: with every
label exactly 630,000 s (7.29 d) late they waited 7 d, so calibration's "matured" window had coverage 0.739 and
the report called a day matured about 7 h before its last labels arrived."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from driftline.analysis.classification import delay_quantiles, delay_upper
from driftline.core.grids import N_DELAY_BINS, delay_bin

from cli_helpers import cli_json

DELAY = 630_000.0
"""Every label this late: just under a delay bin's top edge, so the bin's middle reads about 4 % short."""
CUT = datetime(2026, 10, 22, tzinfo=timezone.utc)
"""The data stops here (the event-time watermark): later outcomes have not arrived yet."""


def _stream(path: Path) -> Path:
    """Predictions every 30 min from 2026-10-01, each labelled exactly DELAY later; nothing after CUT."""
    t0 = datetime(2026, 10, 1, tzinfo=timezone.utc)
    stamp = lambda t: t.isoformat().replace("+00:00", "Z")  # noqa: E731
    events = []
    for i in range(21 * 48):
        ts = t0 + timedelta(minutes=30 * i)
        events.append((ts, {"type": "prediction", "prediction_id": f"p{i}", "model": "m",
                            "score": 0.1 + (i % 8) / 10, "ts": stamp(ts)}))
        late = ts + timedelta(seconds=DELAY)
        events.append((late, {"type": "outcome", "prediction_id": f"p{i}", "label": i % 2, "ts": stamp(late)}))
    with path.open("w") as f:
        for t, e in sorted(events, key=lambda e: e[0]):
            if t <= CUT:
                f.write(json.dumps(e) + "\n")
    return path


def test_the_point_mass_sits_where_the_bin_middle_reads_short():
    """The premise: 630,000 s reads below itself as a bin middle, and its bin's top is above it."""
    hist = np.bincount(delay_bin(np.full(5, DELAY)), minlength=N_DELAY_BINS)
    assert delay_quantiles(hist)["p95"] < 7 * 86400 < DELAY < delay_upper(hist, 0.95)


def test_calibration_and_report_never_call_a_window_matured_before_its_labels(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'd.db'}"
    cli_json(capsys, "--db", url, "replay", "--json", str(_stream(tmp_path / "d.jsonl")))

    cal = cli_json(capsys, "--db", url, "calibration", "--window", "1d", "--json")
    assert cal["matured"]["maturity"]["seconds"] >= DELAY, cal["matured"]["maturity"]
    earlier = cal["matured"]["window"]
    assert earlier["n"] > 0 and earlier["labelled"] == earlier["n"], earlier  # its labels have all arrived

    doc = cli_json(capsys, "--db", url, "report", "--week", "2026-W42", "--out", str(tmp_path / "r"), "--json")
    lm = doc["report"]["label_maturity"]
    assert lm["maturity_seconds"] >= DELAY
    for day in lm["by_day"]:
        end = datetime.fromisoformat(day["date"]).replace(tzinfo=timezone.utc) + timedelta(days=1)
        matures = datetime.fromisoformat(day["matures_at"].replace("Z", "+00:00"))
        assert (matures - end).total_seconds() >= DELAY, day
        if not day["provisional"]:
            assert day["coverage"]["value"] == 1.0, day  # a day called matured has all its labels
    # the week's own p95 lies in the same bin as the period: not set against it as if it differed
    assert "not the week's own p95" not in lm["maturity_basis"], lm["maturity_basis"]
