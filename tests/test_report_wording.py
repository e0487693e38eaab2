"""Issue 17 §2 and §4: domain words and costs come only from the config (a churn model without them reads
domain-neutral and says costs are not configured), targets from the triggers, the summary sentence, the KPI
sentence whose sign and words agree, B − A rows by importance, and the config checks of `domain:`/`costs:`."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec
import pytest

from driftline.cli import main
from driftline.config import ConfigError, from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.reports.data import report_document
from driftline.reports.plots import all_plots
from driftline.reports.render import money, render_html, render_markdown
from driftline.reports.summary import by_importance, kpi_sentence
from driftline.reports.weeks import week_of
from driftline.storage.store import Store
from helpers import seed000_events

DAY = 86400.0
START = datetime(2025, 6, 2, tzinfo=timezone.utc).timestamp()  # Monday of 2025-W23
CHURN: dict[str, Any] = {
    "model": "churn",
    "triggers": [{"name": "recall_low", "metric": "recall", "op": "<", "value": 0.9, "window": "7d", "min_n": 30},
                 {"name": "recall_very_low", "metric": "recall", "op": "<", "value": 0.5, "window": "7d"},
                 {"name": "fpr_high", "metric": "fpr", "op": ">", "value": 0.08, "window": "7d", "min_n": 30}],
}
"""A churn model's config: triggers, but no `domain:` and no `costs:`."""


def _store(tmp_path: Path, config: Any, model: str) -> tuple[str, Store]:
    url = f"sqlite:///{tmp_path / 'w.db'}"
    store = Store(url)
    store.migrate()
    enc = msgspec.json.Encoder()
    recs = [RawRecord("t", 0, i, enc.encode(e)) for i, e in enumerate(seed000_events(START, model))]
    Pipeline(config, store, clock=lambda: START + 30 * DAY).process_batch(recs)
    return url, store


FRAUD_WORDS = re.compile(r"fraud|transaction|analyst|genuine|€|\bEUR\b", re.I)


def test_churn_without_domain_or_costs_is_domain_neutral(tmp_path: Path) -> None:
    """No fraud word and no money anywhere in the report; it says that costs are not configured; targets come
    from the triggers (the strictest line per metric) and the summary sentence states the missed one."""
    config = from_dict(CHURN)
    assert config.costs is None
    url, store = _store(tmp_path, config, "churn")
    doc = report_document(store, config, "churn", week_of(START), START + 30 * DAY)
    html, md = render_html(doc, all_plots(doc)), render_markdown(doc)
    for text in (html, md):
        assert not FRAUD_WORDS.search(text), FRAUD_WORDS.search(text)
        assert "costs not configured" in text and "flagged predictions" in text
    assert "Positives caught" not in html  # no business table at all without costs
    assert not doc["business"]["available"] and doc["currency"] is None
    rows = {r["metric"]: r for r in doc["headline"]["rows"]}
    rec, fpr = rows["recall"], rows["fpr"]
    assert rec["value"] == pytest.approx(0.8) and fpr["value"] == pytest.approx(294 / 4410)
    assert (rec["target"]["value"], rec["target"]["direction"], rec["target"]["source"]) == (0.9, "at least",
                                                                                           "trigger recall_low")
    assert rec["target"]["met"] is False
    assert (fpr["target"]["value"], fpr["target"]["direction"], fpr["target"]["met"]) == (0.08, "at most", True)
    assert doc["summary"] == f"Recall is 0.800 [{rec['low']:.3f}, {rec['high']:.3f}], below the agreed 0.90."
    assert doc["summary_status"] == "bad"
    assert doc["slices"]["document"]["targets"] == {"recall": 0.9, "fpr": 0.08}  # the slices judge the same lines
    t = doc["thresholds"]
    assert t["available"] and not t["costs_configured"] and t["cost_optimal"] is None
    assert all(r["monthly"] is None for r in t["rows"]) and t.get("cheapest") is None
    assert [r["recall"]["value"] for r in t["rows"]][4] == pytest.approx(0.8)
    store.close()


def test_churn_cli_report_and_ab_say_costs_not_configured(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The same through the CLI: `report` writes a neutral report, `ab` prints no money."""
    config = from_dict(CHURN)
    url, store = _store(tmp_path, config, "churn")
    store.close()
    cfg = tmp_path / "churn.yaml"
    cfg.write_text("model: churn\n")
    assert main(["--db", url, "--config", str(cfg), "report", "--week", week_of(START).label,
                 "--out", str(tmp_path / "out")]) == 0
    html = next((tmp_path / "out").glob("*.html")).read_text()
    assert "costs not configured" in html and not FRAUD_WORDS.search(html)
    assert "All headline metrics" not in html and "No targets or triggers are configured" in html
    capsys.readouterr()
    assert main(["--db", url, "--config", str(cfg), "ab"]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"€|\bEUR\b|cost per 1,000", out)


def test_all_targets_met_summary(tmp_path: Path) -> None:
    """Targets that are met read 'All headline metrics within their targets'."""
    config = from_dict({**CHURN, "triggers": [{"name": "recall_low", "metric": "recall", "op": "<", "value": 0.7,
                                               "window": "7d"}]})
    _, store = _store(tmp_path, config, "churn")
    doc = report_document(store, config, "churn", week_of(START), START + 30 * DAY)
    assert doc["summary"] == "All headline metrics within their targets." and doc["summary_status"] == "good"
    store.close()


@pytest.mark.parametrize(("savings", "low", "high", "want"), [
    (-49_473, -87_168, -11_314, "costs €49,473 more a month (range €11,314 to €87,168 more)"),
    (20_000, 5_000, 35_000, "saves €20,000 a month (range €5,000 to €35,000 saved)"),
    (-23_260, -83_748, 37_921, "costs €23,260 more a month (range €83,748 more to €37,921 saved)"),
])
def test_kpi_sentence_sign_and_words_agree(savings: float, low: float, high: float, want: str) -> None:
    """Issue 17 §4: '…more a month(range −€87,168 to −€11,314 saved)' had no space and a negative 'saved'."""
    v = {"savings": savings, "savings_low": low, "savings_high": high, "review_hours_saved": -12.4,
         "extra_caught": 3.0, "complaints_avoided": 7.0}
    words = {"review_hours": "review hours", "positives": "positives"}
    got = kpi_sentence(v, "rules engine", words, lambda x: money(x, "EUR"))
    assert got == (f"Against the rules engine, the model {want}, 12 review hours more, 3 more positives caught "
                   "and 7 fewer complaints.")
    assert "−" not in got and "(range" in got and "a month (" in got


def test_b_minus_a_rows_by_importance() -> None:
    """Recall, precision, FPR, alert rate first (not alphabetical), unknown metrics after them alphabetically."""
    got = [k for k, _ in by_importance({"alert_rate": 1, "fpr": 2, "precision": 3, "zeta": 0, "recall": 4, "a": 5})]
    assert got == ["recall", "precision", "fpr", "alert_rate", "a", "zeta"]


@pytest.mark.parametrize(("data", "field"), [
    ({"domain": {"positives": ""}}, "domain.positives"),
    ({"domain": {"flagged": "x\x1b[31m"}}, "domain.flagged"),
    ({"domain": {"positive": "frauds"}}, "domain.positive"),  # an unknown field by its full path
    ({"costs": {"missed_positive": 400}}, "costs"),
    ({"costs": {"currency": "EUR", "monthly_volume": 0}}, "costs.monthly_volume"),
    ({"costs": {"currency": "EUR", "monthly_volume": 10, "missed_positive": -1}}, "costs.missed_positive"),
])
def test_domain_and_costs_config_errors_name_the_field(data: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"`{field}`")):
        from_dict(data)


def test_example_config_has_fraud_words_and_costs() -> None:
    """driftline.example.yaml keeps the fraud example: domain words and EUR costs."""
    from driftline.config import load

    ex = load(Path(__file__).resolve().parent.parent / "driftline.example.yaml")
    assert ex.domain.positives == "frauds" and ex.domain.missed_cost == "fraud lost"
    assert ex.costs is not None and ex.costs.currency == "EUR" and ex.costs.missed_positive == 400


def test_maturity_period_sentence_says_what_it_is_and_why_it_differs_from_the_weeks_p95() -> None:
    """User tryout: 'p95 3.7 d. Labels count as matured 5.5 d after prediction (by the 95th-percentile label
    delay)': the period is the p95 over `labels.horizon` before the week's end, the 3.7 d the week's own so far."""
    from driftline.config import from_dict
    from driftline.reports.maturity import basis_text

    config, day = from_dict({}), 86400.0
    text = basis_text(config, "label_delay_p95", 5.5 * day, 3.7 * day, pending=True)
    assert text.startswith("the 95th-percentile label delay of the labelled predictions made in the 90 d "
                           "(`labels.horizon`) before the week's end")
    assert "the week's own p95 (3.7 d) is lower because it counts only the labels received so far" in text
    assert "not the week's own p95 (6.1 d)" in basis_text(config, "label_delay_p95", 5.5 * day, 6.1 * day, False)
    assert "week's own" not in basis_text(config, "label_delay_p95", 5.5 * day, 5.48 * day, True)
    implicit = from_dict({"labels": {"policy": "implicit_negative_after", "implicit_negative_after": "30d"}})
    assert basis_text(implicit, "labels.implicit_negative_after", 30 * day, 3.7 * day, True) == \
        "by the `labels.implicit_negative_after`"


def test_the_provisional_note_agrees_in_number() -> None:
    """Tryout: "1 of the week's days with predictions (2026-12-01) are within their label-maturity period"."""
    from driftline.reports.maturity import provisional_note

    day = {"provisional": True, "predictions": 5, "date": "2026-12-01"}
    one = provisional_note([day], 86400.0, True, "2026-12-07")
    two = provisional_note([day, {**day, "date": "2026-12-02"}], 86400.0, True, "2026-12-07")
    assert "1 of the week's days with predictions (2026-12-01) is within" in one
    assert "2 of the week's days with predictions (2026-12-01 to 2026-12-02) are within" in two


def test_chart_names_cut_to_fit_end_in_an_ellipsis() -> None:
    """Tryout: chart labels cut a long feature or trigger name at 40 characters mid-word with nothing to say so."""
    from driftline.reports.plots import _txt

    name = "merchant_category_code_of_the_acquiring_bank"
    assert _txt(name) == name[:39] + "…" and len(_txt(name)) == 40
    assert _txt("amount") == "amount" and _txt("a$b") == r"a\$b"


def test_whole_durations_print_without_a_decimal() -> None:
    """Verification tryout: the report printed "90.0 d (`labels.horizon`)"; whole days and hours print as "90 d"."""
    from driftline import numbers

    day = 86400.0
    assert [numbers.duration(v) for v in (90 * day, 1.5 * day, 3600.0, 5.25 * 3600, 720.0)] == \
        ["90 d", "1.5 d", "1 h", "5.2 h", "12 min"]


def test_summary_with_triggers_only_on_non_headline_metrics_does_not_say_none_are_configured() -> None:
    """verify: a config whose triggers watch label delays and silence only (none on a headline metric) summed up
    the week as "No targets or triggers are configured, so nothing is judged" above its trigger table, where
    label_delay_p95 > 2 d was breached at the week's end. It says no headline metric is judged and names the
    breached trigger; with no trigger at all the sentence is as before."""
    from driftline.reports.summary import summary_sentence

    def doc(triggers: list[dict[str, Any]]) -> dict[str, Any]:
        return {"headline": {"rows": [{"metric": "recall", "target": None}], "triggers": triggers,
                             "metrics": {"counts": {"predictions": 140291}}},
                "drift": {"available": False}, "window": {"end": "2026-12-07T00:00:00Z"},
                "generated_at": "2026-12-07T19:23:06Z"}

    delay = {"name": "delay95", "metric": "label_delay_p95", "at_week_end": {"state": "breached"}, "live": None}
    silent = {"name": "silent", "metric": "silence_seconds", "at_week_end": {"state": "ok"}, "live": None}
    assert summary_sentence(doc([delay, silent])) == ("No headline metric has a target or trigger, so none is "
                                                      "judged; trigger line crossed at the week's end: delay95.")
    assert summary_sentence(doc([silent])) == "No headline metric has a target or trigger, so none is judged."
    assert summary_sentence(doc([])) == "No targets or triggers are configured, so nothing is judged."
