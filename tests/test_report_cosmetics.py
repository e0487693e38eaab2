"""Report cosmetics from a new-user tryout: one percent style ("14.5 %", never "14.5%"), Markdown code in the HTML
set as <code> (not literal backticks around `labels.horizon`), no doubled colon after "Not available", and the score
plot's y axis in the config's `domain:` word for predictions."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import msgspec

from driftline.config import from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.reports.data import report_document
from driftline.reports.plots import all_plots, score_figure
from driftline.reports.render import render_html, render_markdown
from driftline.reports.weeks import week_of
from driftline.storage.store import Store
from helpers import seed000_events

DAY = 86400.0
START = datetime(2025, 6, 2, tzinfo=timezone.utc).timestamp()  # Monday of 2025-W23
CONFIG = {"model": "churn", "domain": {"predictions": "customers", "positives": "churners"},
          "triggers": [{"name": "recall_low", "metric": "recall", "op": "<", "value": 0.9, "window": "7d"}]}


def _doc(tmp_path: Path) -> dict:
    config = from_dict(CONFIG)
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    store.migrate()
    enc = msgspec.json.Encoder()
    events = [e for i, e in enumerate(seed000_events(START, "churn")) if e["type"] == "prediction" or i % 7]
    Pipeline(config, store, clock=lambda: START + 30 * DAY).process_batch(
        [RawRecord("t", 0, i, enc.encode(e)) for i, e in enumerate(events)])
    try:
        return report_document(store, config, "churn", week_of(START), START + 30 * DAY)
    finally:
        store.close()


def test_report_text_reads_as_the_house_style(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    html, md = render_html(doc, all_plots(doc)), render_markdown(doc)
    unlabelled = next(item for item in doc["limitations"] if item.startswith("Unlabelled"))
    assert re.search(r"\(\d+\.\d %", unlabelled), unlabelled  # "14.5 %", as every other percentage
    for text in (html, md):
        assert not re.search(r"\d%", text.replace("100%", "")), re.search(r".{40}\d%.{20}", text)
        assert "not configured:" not in text and "Not available: costs not configured; add a" in text
    body = html.split("<body", 1)[1]
    assert "`" not in re.sub(r"<img[^>]*>", "", body), re.search(r".{60}`.{60}", body)
    assert "(<code>labels.<wbr>horizon</code>)" in html


def test_score_plot_names_the_domain_word_for_predictions(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    fig = score_figure(doc)
    assert fig is not None and fig.axes[0].get_ylabel() == "share of customers"


def test_without_a_reference_the_matured_check_claims_nothing(tmp_path: Path) -> None:
    """Verification tryout: a model without a reference read "not trusted: no reference set", every estimate "—",
    and then "matured labels do not contradict the estimate (no realised value more than 3 sd from it)"."""
    doc = _doc(tmp_path)
    ce = doc["calibration"]["document"]["calibrated"]
    assert "no_reference" in ce["reasons"] and ce["matured"]["checked"] is False
    html = render_html(doc, all_plots(doc))
    assert "One maturity period earlier: there was no estimate to check against matured labels." in html
    assert "do not contradict" not in html
    ce["matured"] = {"contradicted": False, "checked": False,  # an estimate, but no metric with n >= 30 labels
                     "metrics": [{"metric": "recall", "estimated": {"value": 0.7}, "within_interval": None}]}
    html = render_html(doc, all_plots(doc))
    assert "One maturity period earlier: too few matured labels to check the estimate." in html
    assert "do not contradict" not in html


def test_models_whose_names_differ_only_in_unsafe_characters_get_their_own_report_files():
    """Final tryout: models 'a/b', 'a:b' and 'a_b' all wrote reports/report-a_b-2026-W49.html, each replacing the
    other's. A name the file system cannot take as it is also gets a short hash of itself."""
    from driftline.reports.generate import file_stem

    stems = {m: file_stem(m, "2026-W49") for m in ("a/b", "a:b", "a_b", "[/]", "<|>", "fraud")}
    assert len(set(stems.values())) == len(stems)
    assert stems["fraud"] == "report-fraud-2026-W49" and stems["a_b"] == "report-a_b-2026-W49"  # unchanged names
    assert re.fullmatch(r"report-a_b-[0-9a-f]{8}-2026-W49", stems["a/b"])
