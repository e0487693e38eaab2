"""Under the implicit-negative policy `drift` reads the window's prevalence over its matured part, as `metrics` does.

Credit tryout (defaults reported 30–90 days late, goods implicit after 60 days): a 7-day window of predictions
younger than 60 days held only their early outcomes, nearly all defaults, and `drift` printed "prevalence: reference
0.050 · current 0.513 [0.479, 0.546] n=870 · drifted" (1.000 n=4 a month later) though the default rate had not
moved. Here the constructed churn stream of test_matured_part (prevalence 0.25 throughout) is counted by hand.
"""

from __future__ import annotations

import json

from statsmodels.stats.proportion import proportion_confint

from driftline import cli

from test_matured_part import _replay, _stream


def _drift(base: list[str], capsys, *args: str) -> dict:
    capsys.readouterr()
    assert cli.main([*base, "drift", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_drift_reads_prevalence_over_the_matured_part(tmp_path, capsys) -> None:
    base = _replay(tmp_path)
    assert cli.main([*base, "reference", "set", "--from", "2026-06-01", "--to", "2026-07-01"]) == 0
    doc = _drift(base, capsys, "--window", "70d")
    # by hand (test_matured_part): the window starts at hour 720, predictions before hour 959 have matured labels
    old = [r for r in _stream() if 30 * 24 <= r[0] < 959]
    k = sum(r[3] for r in old)
    assert (k, len(old)) == (239, 956)
    prev = doc["prevalence"]
    low, high = proportion_confint(k, len(old), alpha=0.05, method="wilson")
    assert prev["current"]["n"] == len(old) and prev["current"]["k"] == k  # read 0.456 over every labelled one
    assert abs(prev["current"]["low"] - low) < 1e-9 and abs(prev["current"]["high"] - high) < 1e-9
    assert prev["drifted"] is False and prev["over"] == "matured part"
    assert "awaiting their implicit label" in prev["note"]


def test_a_wholly_young_window_cannot_judge_prevalence(tmp_path, capsys) -> None:
    base = _replay(tmp_path)
    assert cli.main([*base, "reference", "set", "--from", "2026-06-01", "--to", "2026-07-01"]) == 0
    doc = _drift(base, capsys, "--window", "14d")  # every prediction younger than 60 days: early positives only
    assert doc["prevalence"]["current"]["n"] == 0 and doc["prevalence"]["drifted"] is False
    capsys.readouterr()
    assert cli.main([*base, "drift", "--window", "14d"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "cannot judge (no labels in its matured part yet" in text


def test_a_wholly_matured_window_reads_prevalence_as_before(tmp_path, capsys) -> None:
    base = _replay(tmp_path)
    assert cli.main([*base, "reference", "set", "--from", "2026-06-01", "--to", "2026-07-01"]) == 0
    doc = _drift(base, capsys, "--window", "14d", "--at", "2026-07-10T23:00:00Z")
    rows = [r for r in _stream() if 959 - 14 * 24 <= r[0] < 959]
    assert doc["prevalence"]["current"]["n"] == len(rows) and doc["prevalence"]["over"] == "window"
    assert doc["prevalence"]["note"] is None


def test_a_reference_reaching_past_the_maturity_boundary_is_warned_about(tmp_path, capsys) -> None:
    """Credit tryout: a reference set over the last five weeks read prevalence 0.736 (575 of 781) from early
    defaults alone, and its calibrated-estimate map with them, without a word."""
    base = _replay(tmp_path)
    capsys.readouterr()
    assert cli.main([*base, "reference", "set", "--from", "2026-07-01", "--to", "2026-07-20", "--json"]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    # the boundary is hour 959 (2026-07-10T23:00Z): hours 959..1103 are young, 4 predictions an hour
    young = [r for r in _stream() if 959 <= r[0] < 19 * 24 + 30 * 24]
    early = sum(1 for r in young if r[4])
    assert len(doc["warnings"]) == 1
    text = " ".join(out.err.split())
    assert (f"{len(young):,} of this reference's {doc['n']:,} predictions (those from 2026-07-10T23:00:00Z) are younger "
            f"than labels.implicit_negative_after (60 d): their {early:,} early outcomes") in text
    assert cli.main([*base, "reference", "set", "--from", "2026-06-01", "--to", "2026-07-10", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["warnings"] == [] and "younger than" not in out.err
