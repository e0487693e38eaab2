"""The report of the week holding now is read up to the end of the bucket holding now, as every default window is
(user tryout: 200 predictions up to now plus one stamped now+23h50m — accepted, ingestion takes events a day ahead
of the clock — and the default `report` counted 201 predictions, showed a daily row for tomorrow and "5 of the
week's days with predictions (… to 2026-12-06)", while `metrics`/`drift`/`ab` ended at the bucket holding now)."""

from __future__ import annotations

from driftline.config import Config
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import replay
from driftline.readouts.metrics import MetricsQuery, metrics_document
from driftline.reports.data import report_document
from driftline.reports.weeks import default_week, parse_week
from driftline.storage.store import Store

from helpers import pred

NOW = 1_796_440_800.0  # 2026-12-05T03:20:00Z, a Saturday: inside the hour bucket ending 04:00 of 2026-W49
FUTURE = NOW + 23 * 3600 + 50 * 60  # 2026-12-06T03:10Z: tomorrow, still in 2026-W49


def _store(tmp_path, now: float = NOW) -> Store:
    rows = [pred(f"p{i}", 0.2 + (i % 7) / 10, now - i * 600) for i in range(200)]
    rows.append(pred("fast-clock", 0.9, now + 23 * 3600 + 50 * 60))
    events = tmp_path / "e.jsonl"
    events.write_bytes(b"\n".join(rows) + b"\n")
    store = Store(f"sqlite:///{tmp_path / 's.db'}", clock=lambda: now)
    store.migrate()
    assert replay(Pipeline(Config(), store, clock=lambda: now), str(events)).dead == 0
    return store


def test_default_report_of_the_current_week_ends_at_the_bucket_holding_now(tmp_path) -> None:
    store = _store(tmp_path)
    week, reason = default_week(store, "fraud", NOW, Config().bucket_s)
    assert week.label == "2026-W49" and "partial" in reason
    doc = report_document(store, Config(), "fraud", week, NOW, reason)
    assert doc["window"]["end"] == "2026-12-05T04:00:00Z"  # as `metrics` ends its default window
    assert doc["headline"]["metrics"]["counts"]["predictions"] == 200
    assert metrics_document(store, Config(), MetricsQuery("fraud", 7 * 86400))["window"]["end"] == doc["window"]["end"]
    days = [d["date"] for d in doc["trends"]["days"]]
    assert days[-1] == "2026-12-05" and "2026-12-06" not in days
    assert sum(d["counts"]["predictions"] for d in doc["trends"]["days"]) == 200
    assert doc["partial_week"] and doc["provisional"]


def test_given_current_week_does_not_count_past_now_but_a_past_week_is_whole(tmp_path) -> None:
    store = _store(tmp_path)
    current = report_document(store, Config(), "fraud", parse_week("2026-W49"), NOW)
    assert current["headline"]["metrics"]["counts"]["predictions"] == 200
    past = report_document(store, Config(), "fraud", parse_week("2026-W48"), NOW)
    assert past["window"] == {"start": "2026-11-23T00:00:00Z", "end": "2026-11-30T00:00:00Z",
                              "seconds": 604800.0, "label": "7d"}
    assert len(past["trends"]["days"]) == 7


def test_a_prediction_stamped_into_next_week_does_not_pick_next_week(tmp_path) -> None:
    sunday = NOW + 86400 + 16 * 3600  # 2026-12-06T19:20Z; the fast-clock prediction lands on Monday of 2026-W50
    store = _store(tmp_path, sunday)
    week, reason = default_week(store, "fraud", sunday, Config().bucket_s)
    assert week.label == "2026-W49", reason
    doc = report_document(store, Config(), "fraud", week, sunday, reason)
    assert doc["window"]["end"] == "2026-12-06T20:00:00Z" and doc["headline"]["metrics"]["counts"]["predictions"] == 200


def test_the_label_watermark_is_not_ahead_of_the_clock(tmp_path) -> None:
    """SRE tryout: the one future-stamped prediction moved the report's label watermark to tomorrow
    ("watermark": "2026-12-06T…"), so days counted as settled up to a day too early."""
    store = _store(tmp_path)
    week, reason = default_week(store, "fraud", NOW, Config().bucket_s)
    maturity = report_document(store, Config(), "fraud", week, NOW, reason)["label_maturity"]
    assert maturity["watermark"] == "2026-12-05T03:20:00Z"


def test_a_partial_week_cut_on_a_saturday_names_its_end_saturday(tmp_path) -> None:
    """Verification tryout: the partial week's header read "… to Monday 2026-12-05 11:00 UTC", a Saturday: the
    templates wrote "Monday" before both ends; the weekday is now read from each date (render.day_when)."""
    import re

    from driftline.reports.plots import all_plots
    from driftline.reports.render import render_html, render_markdown

    store = _store(tmp_path)
    week, reason = default_week(store, "fraud", NOW, Config().bucket_s)
    doc = report_document(store, Config(), "fraud", week, NOW, reason)
    md = render_markdown(doc)
    html = " ".join(re.sub(r"<[^>]+>", "", render_html(doc, all_plots(doc))).split())
    for text in (md, html):
        assert "from Monday 2026-11-30 00:00 UTC to Saturday 2026-12-05 04:00 UTC" in text, text[:600]
        assert "Monday 2026-12-05" not in text
