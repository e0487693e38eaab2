"""Labels that keep arriving after `labels.implicit_negative_after` are named (credit tryout: defaults 30–90 days
late against 60 days; the matured part counted late defaults as goods, precision read 0.258 for ~0.44, prevalence
"drifted" low and calibration called the right estimate NOT TRUSTED, and nothing said why). `calibration`, `drift`
(prevalence) and `alerts validate` now warn, with the share of explicit labels that came later and the setting that
covers the 95th percentile. The churn stream of test_matured_part: positives labelled 30–60 days after prediction."""

from __future__ import annotations

import json

import numpy as np

from driftline import cli
from driftline.analysis.label_arrival import labels_later_than
from driftline.core.grids import DELAY_EDGES

from test_matured_part import _replay

EARLY = {"labels": {"policy": "implicit_negative_after", "implicit_negative_after": "20d", "horizon": "90d"}}


def _json(base: list[str], capsys, *args: str) -> dict:
    capsys.readouterr()
    assert cli.main([*base, *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_labels_later_than_counts_the_bins_that_start_at_or_after_the_setting() -> None:
    hist = np.zeros(len(DELAY_EDGES), dtype=np.int64)
    day = 86400.0
    for d, n in ((5, 7), (25, 3), (45, 2)):
        hist[int(np.searchsorted(DELAY_EDGES, d * day, side="right")) - 1] += n
    assert labels_later_than(hist, 20 * day) == (5, 12)
    assert labels_later_than(hist, 30 * day) == (2, 12)


def test_calibration_drift_and_alerts_validate_warn_when_labels_come_after_the_setting(tmp_path, capsys) -> None:
    base = _replay(tmp_path, triggers=[{"name": "prec", "metric": "precision", "op": "<", "value": 0.5,
                                        "window": "70d"}], extra=EARLY)
    note = _json(base, capsys, "calibration")["note"]
    assert "labels of model 'churn' keep arriving after `labels.implicit_negative_after` (20 d): 1,320 of 1,320 " \
        "explicit labels (100.0%) came later" in note, note
    assert note.endswith("Set `labels.implicit_negative_after` to at least 59d (the 95th percentile's bin)")
    assert cli.main([*base, "reference", "set", "--from", "2026-06-01", "--to", "2026-07-01"]) == 0
    prev = _json(base, capsys, "drift")["prevalence"]
    assert "keep arriving after" in prev["note"]
    capsys.readouterr()
    cli.main([*base, "alerts", "validate"])
    assert "keep arriving after `labels.implicit_negative_after`" in " ".join(capsys.readouterr().err.split())


def test_no_warning_when_the_setting_covers_the_delays(tmp_path, capsys) -> None:
    base = _replay(tmp_path)  # 60 d: every positive labelled 30-60 d after prediction
    doc = _json(base, capsys, "calibration")
    assert "keep arriving after" not in (doc.get("note") or "")
