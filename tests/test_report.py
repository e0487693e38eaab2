"""Weekly report: numbers equal the CLI's JSON for the same window, seed 000's KPI and threshold tables from a
store, storage per model and ISO week, HTML in headless Chromium (no console error, no network, every image
drawn, event text escaped and never executed), Markdown escaping, the default week."""

from __future__ import annotations

import base64
import io
import json
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
import yaml
from PIL import Image

from driftline.cli import main
from driftline.commands.demo import EXAMPLE_COSTS, EXAMPLE_DOMAIN
from driftline.config import Costs, from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.readouts.references import build_reference_profile, save_reference, window_stats
from driftline.reports import table
from driftline.reports.data import report_document
from driftline.reports.generate import generate
from driftline.reports.render import md_escape, render_markdown
from driftline.reports.weeks import IsoWeek, default_week, parse_week, week_of
from driftline.ingest.simulate import SimSpec, stream
from driftline.storage.store import Store
from cli_helpers import cli_json as run_cli_json
from helpers import seed000_events
from services import require_binary

XSS = "<script>alert(1)</script>"
XSS_TITLE = "<script>document.title='PWNED'</script>"
START = datetime(2025, 11, 3, tzinfo=timezone.utc).timestamp()  # Monday of ISO week 2025-W45
DAY = 86400.0
END = START + 21 * DAY  # Monday 2025-11-24: weeks W45, W46 (reference) and W47 (drift from day 14)
WEEK = "2025-W47"
CLOCK = END + 3600.0
SETTINGS: dict[str, Any] = {
    "model": "fraud",
    "features": {"amount": "numeric", "country": "categorical", "channel": "categorical", XSS: "categorical"},
    "slices": [XSS, "country"],
    "targets": {"recall": 0.7, "fpr": 0.08, "analyst_hours": 1500},  # the older name of review_hours
    "costs": dict(EXAMPLE_COSTS),
    "domain": dict(EXAMPLE_DOMAIN),
    "triggers": [
        {"name": "recall_below_target", "metric": "recall", "op": "<", "value": 0.7, "window": "7d", "min_n": 30,
         "severity": "critical"},
        {"name": "fpr_above_target", "metric": "fpr", "op": ">", "value": 0.08, "window": "7d", "min_n": 30},
    ],
}


def _ingest(store: Store, config: Any, events: list[dict[str, Any]], clock: float) -> None:
    enc = msgspec.json.Encoder()
    pipeline = Pipeline(config, store, clock=lambda: clock)
    recs = [RawRecord("test", 0, i, enc.encode(e)) for i, e in enumerate(events)]
    for i in range(0, len(recs), 20_000):
        pipeline.process_batch(recs[i:i + 20_000])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three simulated ISO weeks (drift in the third) with an XSS feature name and values, a reference from the
    first two weeks, the config as a YAML file, and the report of the third week made by the CLI."""
    tmp = tmp_path_factory.mktemp("report")
    cfg_path = tmp / "config.yaml"
    cfg_path.write_text(yaml.safe_dump(SETTINGS, allow_unicode=True))
    config = from_dict(SETTINGS)
    rng = np.random.default_rng(5)
    events = list(stream(SimSpec(start=START, days=21, per_day=400, drift_day=14, seed=3), end=END))
    for ev in events:
        if ev["type"] == "prediction":
            ev["features"][XSS] = [XSS, XSS_TITLE, "fine"][int(rng.integers(3))]
    url = f"sqlite:///{tmp / 'r.db'}"
    store = Store(url, clock=lambda: CLOCK)
    store.migrate()
    _ingest(store, config, events, CLOCK)
    stats, lo, hi = window_stats(store, config, "fraud", START, START + 14 * DAY)
    save_reference(store, "fraud", build_reference_profile(stats, config), "window", lo, hi, confusion=stats)
    store.close()
    out = tmp / "out"
    return {"tmp": tmp, "url": url, "cfg": str(cfg_path), "config": config, "out": out, "events": events}


def cli_json(capsys: pytest.CaptureFixture[str], world: dict[str, Any], *args: str) -> Any:
    """Run `driftline --db … --config … ARGS` in-process and parse its JSON output."""
    return run_cli_json(capsys, "--db", world["url"], "--config", world["cfg"], *args)


@pytest.fixture(scope="module")
def report(world: dict[str, Any]) -> dict[str, Any]:
    """`driftline report --week 2025-W47 --json` (run once for the module)."""
    import contextlib

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["--db", world["url"], "--config", world["cfg"], "report", "--week", WEEK,
                     "--out", str(world["out"]), "--json"]) == 0
    return json.loads(buf.getvalue())


def _roundtrip(x: Any) -> Any:
    return json.loads(json.dumps(x))


def test_report_numbers_equal_cli_json(report: dict[str, Any], world: dict[str, Any],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Headline, A/B, drift, calibration, slices and a daily trend equal `driftline … --json` for the same window."""
    doc = report["report"]
    at = ["--at", "2025-11-24T00:00:00Z", "--window", "7d"]
    assert doc["window"]["start"] == "2025-11-17T00:00:00Z" and doc["window"]["end"] == "2025-11-24T00:00:00Z"
    metrics = cli_json(capsys, world, "metrics", "--json", *at)
    assert _roundtrip(doc["headline"]["metrics"]) == metrics
    assert metrics["counts"]["predictions"] > 2000 and metrics["counts"]["positives"] >= 30
    assert _roundtrip(doc["ab"]["document"]) == cli_json(capsys, world, "ab", "--json", *at)
    drift = cli_json(capsys, world, "drift", "--json", *at)
    assert doc["drift"]["available"] and _roundtrip(doc["drift"]["document"]) == drift
    assert "country" in drift["drifted"]  # the simulator's drift moves the country mix in the third week
    assert _roundtrip(doc["calibration"]["document"]) == cli_json(capsys, world, "calibration", "--json", *at)
    assert _roundtrip(doc["slices"]["document"]) == cli_json(capsys, world, "slices", "--json", *at)
    day3 = cli_json(capsys, world, "metrics", "--json", "--at", "2025-11-20T00:00:00Z", "--window", "1d")
    trend = doc["trends"]["days"][2]
    assert trend["date"] == "2025-11-19"
    assert trend["counts"] == day3["counts"] and trend["recall"] == day3["metrics"]["recall"]
    assert trend["label_coverage"] == day3["label_coverage"]
    # headline rows are the metrics document's rates, with the configured targets judged on them
    recall_row = next(r for r in doc["headline"]["rows"] if r["metric"] == "recall")
    assert recall_row["value"] == metrics["metrics"]["recall"]["value"]
    assert recall_row["target"]["met"] == (metrics["metrics"]["recall"]["value"] >= 0.7)
    assert recall_row["triggers"] == ["recall_below_target"]
    # the trigger judged at the week's end reads the same value as the metrics document
    judged = {t["name"]: t["at_week_end"] for t in doc["headline"]["triggers"]}
    assert judged["recall_below_target"]["value"] == metrics["metrics"]["recall"]["value"]
    assert judged["recall_below_target"]["state"] == (
        "breached" if metrics["metrics"]["recall"]["value"] < 0.7 else "ok")
    # business KPIs are business_kpis of the headline rates at the monthly volume
    b = doc["business"]
    m = metrics["metrics"]
    prev = m["prevalence"]["value"]
    assert b["model"]["caught"] == pytest.approx(100_000 * prev * m["recall"]["value"])
    assert b["model"]["false_positives"] == pytest.approx(100_000 * (1 - prev) * m["fpr"]["value"])
    assert b["baseline"]["flagged"] == pytest.approx(10_000) and b["baseline"]["caught"] == pytest.approx(1_200)


def test_report_files_and_storage(report: dict[str, Any], world: dict[str, Any]) -> None:
    """Three files per run; one stored row per (model, week); the CLI replaces it, the scheduler mode keeps it."""
    paths = {k: Path(v) for k, v in report["paths"].items()}
    assert {p.name for p in paths.values()} == {f"report-fraud-{WEEK}.{e}" for e in ("html", "md", "json")}
    assert json.loads(paths["json"].read_text()) == report["report"]
    store = Store(world["url"])
    try:
        rows = table.listing(store, "fraud")
        assert [(r["model"], r["week"]) for r in rows] == [("fraud", WEEK)]
        stored = table.load(store, "fraud", WEEK)
        assert stored is not None and stored.html == paths["html"].read_text()
        res = generate(store, world["config"], "fraud", parse_week(WEEK), CLOCK + 60, world["out"], replace=False)
        assert not res.stored and res.paths == {}
        assert table.load(store, "fraud", WEEK).generated_at == stored.generated_at
        assert len(table.listing(store)) == 1
    finally:
        store.close()


def _png(data: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(data))
    im.load()
    return im


def _non_blank(im: Image.Image) -> float:
    """Share of pixels that are not (near) white."""
    a = np.asarray(im.convert("L"), dtype=np.float64)
    return float((a < 245).mean())


def test_html_in_headless_chromium(report: dict[str, Any], tmp_path: Path) -> None:
    """No console message, no network request, every plot drawn, the XSS name/values shown escaped, never run."""
    chromium = require_binary("chromium")
    html_path = Path(report["paths"]["html"])
    html = html_path.read_text()
    # self-contained: the only http(s) URLs allowed are anchors' hrefs (none here); images are data URIs
    assert not re.search(r"""\b(?:src|srcset|poster|data)\s*=\s*["']?\s*(?:https?:)?//""", html, re.I)
    assert not re.search(r"""<link\b|@import|url\(\s*["']?(?:https?:)?//""", html, re.I)
    assert "<script" not in html.lower().replace("&lt;script", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and XSS not in html
    imgs = re.findall(r'<img class="plot[^"]*" alt="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(imgs) == 7  # trends (recall, FPR, precision), drift, score distribution, reliability, threshold curve
    for b64 in imgs:
        im = _png(base64.b64decode(b64))
        assert im.width >= 300 and im.height >= 200 and _non_blank(im) > 0.02
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
             "--enable-logging=stderr", "--v=0", "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars"]
    url = html_path.resolve().as_uri()
    dom = subprocess.run([chromium, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=90)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert ":CONSOLE" not in dom.stderr, [ln for ln in dom.stderr.splitlines() if ":CONSOLE" in ln]
    title = re.search(r"<title>(.*?)</title>", dom.stdout, re.S)
    assert title is not None and title.group(1) == f"driftline report · fraud · {WEEK}"  # not PWNED
    assert "<script" not in dom.stdout.lower().replace("&lt;script", "")
    assert dom.stdout.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 2  # slice feature name and value
    # shown escaped; as an identifier (a slice value) it may break after its `.` (<wbr>, see wrapping.py)
    assert "&lt;script&gt;document.title='PWNED'&lt;/script&gt;" in dom.stdout.replace("<wbr>", "")
    shot = tmp_path / "page.png"
    res = subprocess.run([chromium, *flags, "--window-size=1280,4000", f"--screenshot={shot}", url],
                         capture_output=True, text=True, timeout=90)
    assert res.returncode == 0 and ":CONSOLE" not in res.stderr
    page = _png(shot.read_bytes())
    assert page.size == (1280, 4000)
    assert 0.03 < _non_blank(page) < 0.9  # text, tables and plots drawn, not a blank or solid page


def test_signed_numbers_use_the_minus_sign(report: dict[str, Any]) -> None:
    """User tryout: the HTML 'model − baseline' column printed '-4,516' with a hyphen beside '−€22,580': every
    number in the HTML and Markdown text has the minus sign; the difference column is signed both ways."""
    html = Path(report["paths"]["html"]).read_text()
    for path in (report["paths"]["html"], report["paths"]["md"]):
        text = Path(path).read_text()
        text = re.sub(r"<style>.*?</style>|data:image/png;base64,[A-Za-z0-9+/=]+", "", text, flags=re.S)
        assert not re.findall(r".{0,30}(?<![\w-])-\d", text), re.findall(r".{0,30}(?<![\w-])-\d", text)[:5]
    body = html[html.index("<th>model − baseline</th>"):]
    cells = re.findall(r"<td>([^<]*)</td></tr>", body[:body.index("</table>")])
    assert len(cells) == 10 and all(c[:1] in ("\u2212", "+") or not re.search(r"[1-9]", c) for c in cells), cells


def test_maturity_period_is_explained_and_true(report: dict[str, Any], world: dict[str, Any]) -> None:
    """User tryout: 'p95 3.7 d. Labels count as matured 5.5 d after prediction (by the 95th-percentile label delay)'
    read as a contradiction. The sentence names the look-back the period comes from, and that is how it is computed:
    the p95 label delay of the predictions of the `labels.horizon` before the week's end, at the top of its delay bin
    (delay_upper, the rule of `--matured`: never short of the true delay), rounded up to the bucket."""
    import math

    from driftline.analysis.classification import delay_upper
    from driftline.numbers import duration
    from driftline.readouts.drift import _stats
    from driftline.readouts.windows import Window

    lm = report["report"]["label_maturity"]
    config = world["config"]
    store = Store(world["url"])
    try:
        look = Window(END - config.labels.horizon_s, END)
        p95 = delay_upper(_stats(store, "fraud", look, None, False).delay, 0.95)
    finally:
        store.close()
    assert lm["maturity_seconds"] == math.ceil(p95 / config.bucket_s) * config.bucket_s
    week_p95 = lm["delay_seconds"]["p95"]
    assert week_p95 < lm["maturity_seconds"] and lm["provisional"]  # the week's own labels are not all in yet
    html = " ".join(re.sub(r"<[^>]+>", "", Path(report["paths"]["html"]).read_text()).replace("&#39;", "'").split())
    md = " ".join(Path(report["paths"]["md"]).read_text().replace("\\", "").split())
    for text, horizon in ((html, "labels.horizon"), (md, "`labels.horizon`")):  # HTML: in <code>, not backticks
        assert (f"matured {duration(lm['maturity_seconds'])} after prediction: the 95th-percentile label delay of "
                f"the labelled predictions made in the 90 d ({horizon}) before the week's end") in text
        assert f"the week's own p95 ({duration(week_p95)}) is lower because it counts only the labels" in text
        assert "(by the 95th-percentile label delay)" not in text


def test_markdown_escapes_event_text(report: dict[str, Any]) -> None:
    """The Markdown report shows event text inert: no raw tag, table pipes escaped; JSON keeps the raw string."""
    md = Path(report["paths"]["md"]).read_text()
    assert "<script" not in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    assert md_escape("a|b_c*<i>") == "a\\|b\\_c\\*&lt;i&gt;"
    assert XSS in Path(report["paths"]["json"]).read_text()
    assert "## What this report does not show" in md and "in-sample" in md


# --- seed 000 -----------------------------------------------------------------------------------------------
def test_seed000_kpis_and_threshold_table_from_a_store(tmp_path: Path) -> None:
    """Seed 000: 90 frauds / 4,410 genuine (2 %) scored so that thresholds 0.9…0.1 give recall 0.4…1.0 and FPR
    1/90…40/90 → the business table (€200,867, 1,356 h, 327 complaints vs the rules engine's €370,000) and the
    threshold table (€489,644 … €227,978, cheapest 0.3 at €170,867) at 100,000 transactions a month."""
    config = from_dict({"costs": dict(EXAMPLE_COSTS)})
    assert config.costs.missed_positive == 400 and config.costs.monthly_volume == 100_000  # seed 000's costs
    assert (config.costs.baseline_flagged, config.costs.baseline_caught) == (10_000, 1_200)
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    store.migrate()
    start = datetime(2025, 6, 2, tzinfo=timezone.utc).timestamp()  # Monday of 2025-W23
    _ingest(store, config, seed000_events(start), start + 30 * DAY)
    week = week_of(start)
    doc = report_document(store, config, "fraud", week, start + 30 * DAY)
    c = doc["headline"]["metrics"]["counts"]
    assert (c["tp"], c["fn"], c["fp"], c["tn"]) == (72, 18, 294, 4116)
    b = doc["business"]
    assert (round(b["model"]["total"]), round(b["model"]["review_hours"]), round(b["model"]["complaints"]),
            round(b["model"]["missed_cost"]), round(b["model"]["flagged"])) == (200_867, 1_356, 327, 160_000, 8_133)
    assert (round(b["baseline"]["total"]), round(b["baseline"]["review_hours"]),
            round(b["baseline"]["complaints"])) == (370_000, 1_667, 440)
    vs = b["versus_baseline"]
    assert round(vs["savings"]) == 169_133 and round(vs["review_hours_saved"]) == 311
    t = doc["thresholds"]
    rows = {r["threshold"]: r for r in t["rows"]}
    expected = {0.9: (0.40, 1_089, 54, 315, 480_000, 489_644), 0.7: (0.60, 3_267, 163, 744, 320_000, 342_533),
                0.5: (0.80, 6_533, 327, 1_356, 160_000, 200_867), 0.3: (0.90, 16_333, 817, 3_022, 80_000, 170_867),
                0.1: (1.00, 43_556, 2_178, 7_593, 0, 227_978)}
    for th, (recall, fa, compl, hours, lost, total) in expected.items():
        m = rows[th]["monthly"]
        assert rows[th]["recall"]["value"] == pytest.approx(recall)
        assert (round(m["false_alarms"]), round(m["complaints"]), round(m["review_hours"]), round(m["missed_cost"]),
                round(m["total"])) == (fa, compl, hours, lost, total)
    assert round(rows[0.9]["monthly"]["precision"], 3) == 0.424 and round(rows[0.5]["monthly"]["precision"], 3) == 0.197
    # at the deployed threshold the table is the metrics' counts scaled to the monthly volume
    r5 = rows[0.5]
    assert r5["deployed"] and r5["counts"] == {"tp": c["tp"], "fp": c["fp"], "fn": c["fn"], "tn": c["tn"]}
    scale = 100_000 / c["labelled"]
    assert r5["monthly"]["caught"] == pytest.approx(c["tp"] * scale)
    assert r5["monthly"]["false_alarms"] == pytest.approx(c["fp"] * scale)
    assert r5["monthly"]["total"] == pytest.approx(b["model"]["total"])
    # cheapest tabulated threshold (0.2 ties 0.3: no score between them; the higher one is kept), in-sample
    assert t["cheapest"] == {"threshold": 0.3, "total": pytest.approx(170_866.67, abs=0.01), "in_sample": True}
    assert rows[0.3]["cheapest_in_sample"] and not rows[0.5]["cheapest_in_sample"]
    assert t["cost_optimal"]["threshold"] == pytest.approx(5 / 405)
    assert t["cost_optimal_row"]["recall"]["value"] == 1.0
    store.close()


def test_cost_optimal_threshold_includes_complaint_cost() -> None:
    """C_FP = review + complaint rate × complaint cost: €5 + 0.05 × €100 = €10 against C_FN = €400 → 10/410."""
    from driftline.reports.business import cost_optimal_threshold

    example = msgspec.convert(EXAMPLE_COSTS, Costs)
    assert cost_optimal_threshold(msgspec.structs.replace(example, complaint_cost=100.0)) == pytest.approx(10 / 410)
    assert cost_optimal_threshold(msgspec.structs.replace(example, missed_positive=0, review_per_flag=0,
                                                          complaint_rate=0)) is None


# --- weeks and missing sections --------------------------------------------------------------------------------
def test_iso_weeks_and_default_week(world: dict[str, Any]) -> None:
    """ISO week arithmetic, parsing, and the documented default-week rule on the module's store."""
    w = parse_week("2025-W47")
    assert (w.start, w.end) == (END - 7 * DAY, END) and w.previous().label == "2025-W46"
    assert week_of(END - 1).label == "2025-W47" and week_of(END).label == "2025-W48"
    assert IsoWeek(2020, 53).label == "2020-W53" and parse_week("2026w1").label == "2026-W01"
    with pytest.raises(Exception, match="no ISO week 53"):
        parse_week("2025-W53")
    store = Store(world["url"])
    try:
        assert default_week(store, "fraud", CLOCK) == (w, "last complete ISO week before now")
        late = default_week(store, "fraud", END + 60 * DAY)  # clock far ahead: fall back to the data
        assert late[0].label == "2025-W46" and "newest stored prediction" in late[1]
    finally:
        store.close()
    empty = Store(f"sqlite:///{world['tmp'] / 'partial.db'}")
    empty.migrate()
    _ingest(empty, world["config"], [{"type": "prediction", "prediction_id": "x", "model": "fraud",
                                      "ts": START + 3600, "score": 0.3}], CLOCK)
    assert default_week(empty, "fraud", START + 7200) == (week_of(START), "week of the newest stored prediction "
                                                                            "(partial: no complete week stored)")


def test_week_not_over_is_provisional_for_that_reason(tmp_path: Path) -> None:
    """User tryout: `report --week` of a week not yet over said "Provisional: every day of the week is past its
    label-maturity period". Monday and Tuesday's labels have matured (10 min delays, newest event on Friday) but the
    week runs to next Monday: provisional, saying the week has not ended, never that every day is past maturity."""
    config = from_dict({})
    store = Store(f"sqlite:///{tmp_path / 'p.db'}")
    store.migrate()
    start = datetime(2025, 6, 2, tzinfo=timezone.utc).timestamp()  # Monday of 2025-W23
    events = [e for e in seed000_events(start) if _ts(e) < start + 2 * DAY]
    events.append({"type": "prediction", "prediction_id": "late", "model": "other", "ts": start + 4.5 * DAY,
                   "score": 0.2})  # moves the event-time watermark to Friday
    _ingest(store, config, events, start + 5 * DAY)
    doc = report_document(store, config, "fraud", week_of(start), start + 5 * DAY)
    store.close()
    lm = doc["label_maturity"]
    assert not any(d["provisional"] for d in lm["by_day"] if d["predictions"])  # the days with data have matured
    assert doc["provisional"] and lm["provisional"]
    assert lm["note"] == "the week has not ended yet (it ends 2025-06-09 00:00 UTC), so its later days are still to come"
    md = render_markdown(doc)
    assert f"> **Provisional:** {lm['note']}." in md and "past its label-maturity period" not in md
    assert "some days are still within their label-maturity period" not in md


def test_week_without_predictions_says_so_first_and_dates_later_alerts(world: dict[str, Any]) -> None:
    """User tryout: `report --week` of a week with no predictions summed up as "Alert recall_below_target firing
    since 2026-11-28" (after that week) and never said the week was empty. It says so first; an alert that began
    firing after the week is labelled as today's state, one firing since before the week's end as the week's."""
    import copy

    from driftline.reports.summary import summary_sentence, summary_status

    store = Store(world["url"])
    try:
        doc = report_document(store, world["config"], "fraud", parse_week("2025-W40"), CLOCK)
    finally:
        store.close()
    assert doc["headline"]["metrics"]["counts"]["predictions"] == 0
    assert doc["summary"].startswith("No predictions stored for this week, so nothing in it can be judged")
    later, during = copy.deepcopy(doc), copy.deepcopy(doc)
    live = {"state": "firing", "since": "2025-11-20T00:00:00Z", "updated_at": "2025-11-24T00:00:00Z"}
    later["headline"]["triggers"][0]["live"] = live
    during["headline"]["triggers"][0]["live"] = {**live, "since": "2025-09-30T00:00:00Z"}
    assert summary_sentence(later) == ("No predictions stored for this week, so nothing in it can be judged; after "
                                       "this week, as of 2025-11-24 01:00 UTC: alert firing recall_below_target "
                                       "(since 2025-11-20).")
    assert summary_status(later) == "info"
    assert summary_sentence(during) == ("No predictions stored for this week, so nothing in it can be judged; alert "
                                        "recall_below_target firing since 2025-09-30.")
    assert summary_status(during) == "bad"
    assert f"live state (as of {later['generated_at'][:10]} 01:00 UTC)" in render_markdown(later)


def test_sections_without_reference_say_not_available(tmp_path: Path) -> None:
    """No reference profile: drift is "not available" with the reason, the rest of the report still renders."""
    config = from_dict({})
    store = Store(f"sqlite:///{tmp_path / 'n.db'}")
    store.migrate()
    start = datetime(2025, 6, 2, tzinfo=timezone.utc).timestamp()
    _ingest(store, config, seed000_events(start)[:400], start + 30 * DAY)
    doc = report_document(store, config, "fraud", week_of(start), start + 30 * DAY)
    assert not doc["drift"]["available"] and "reference set" in doc["drift"]["reason"]
    assert doc["score_distribution"]["reference_vs_current"] is None
    assert any(s.startswith("Drift: not available") for s in doc["limitations"])
    assert "Not available: no reference profile" in render_markdown(doc)
    store.close()


# --- issue 17 §4: readable score distribution, example wording, layout at desktop and phone widths -------------
def _ts(ev: dict[str, Any]) -> float:
    t = ev["ts"]
    return float(t) if isinstance(t, (int, float)) else datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()


def test_score_distribution_on_equal_width_bins(report: dict[str, Any], world: dict[str, Any]) -> None:
    """This week and the reference (weeks 1–2) on the ten bins 0.0–0.1 … 0.9–1.0: counts equal numpy's histogram
    of the raw event scores; the plot and the table use the same bins; no underflow/overflow/other/missing bar."""
    sd = report["report"]["score_distribution"]
    edges = [round(i / 10, 1) for i in range(11)]
    assert sd["edges"] == edges and [(b["low"], b["high"]) for b in sd["bins"]] == list(zip(edges, edges[1:]))
    preds = [e for e in world["events"] if e["type"] == "prediction"]
    week_start, week_end = END - 7 * DAY, END
    cur = np.histogram([e["score"] for e in preds if week_start <= _ts(e) < week_end], bins=edges)[0]
    ref = np.histogram([e["score"] for e in preds if START <= _ts(e) < START + 14 * DAY], bins=edges)[0]
    assert [b["current"] for b in sd["bins"]] == cur.tolist() and sd["current_n"] == int(cur.sum())
    assert [b["reference"] for b in sd["bins"]] == ref.tolist() and sd["reference"]["n"] == int(ref.sum())
    assert [b["current_share"] for b in sd["bins"]] == pytest.approx((cur / cur.sum()).tolist())
    assert sd["reference"]["other"] == 0 and sd["reference"]["missing"] == 0
    assert sd["reference_vs_current"]["psi"] == report["report"]["drift"]["document"]["score"]["psi"]
    html = Path(report["paths"]["html"]).read_text()
    for lo, hi in zip(edges, edges[1:]):
        assert f"<th>{lo:.1f}–{hi:.1f}</th>" in html
    assert "underflow" not in html and "overflow)" not in html and "Not shown:" not in html


def test_example_wording_summary_and_glossary(report: dict[str, Any]) -> None:
    """With the example's `domain:` and `costs:` the report speaks of frauds and euros; the summary sentence is
    built from the headline rows; a glossary explains the abbreviations; B − A rows come by importance."""
    doc = report["report"]
    html = Path(report["paths"]["html"]).read_text()
    md = Path(report["paths"]["md"]).read_text()
    for text in (html, md):
        assert "Transactions flagged for review" in text and "Frauds caught" in text and "Fraud lost" in text
        assert "€" in text and "costs not configured" not in text
        assert "ISO week, UTC" not in text and "week 47 of 2025" in text
    recall = next(r for r in doc["headline"]["rows"] if r["metric"] == "recall")
    if recall["target"]["met"] is False:
        assert doc["summary"].startswith(f"Recall is {recall['value']:.3f} [{recall['low']:.3f}, "
                                         f"{recall['high']:.3f}], below the agreed 0.70")
    assert doc["summary"] in html.replace("&#39;", "'") and f"**In one sentence:** {md_escape(doc['summary'])}" in md
    assert [t["kpi"] for t in doc["business"]["targets"]] == ["review_hours"]  # targets: {analyst_hours: 1500}
    assert '<tr><td class="l">Analyst hours</td><td>1,500</td>' in html
    terms = [g["term"] for g in doc["glossary"]]
    assert {"Recall", "FPR (false positive rate)", "Alert rate", "Label coverage", "AUC"} <= set(terms)
    assert any(t.startswith("ECE") for t in terms) and any(t.startswith("PSI") for t in terms)
    assert '<h2 id="glossary">' in html and "## Glossary" in md
    (comp,) = doc["ab"]["document"]["comparisons"]
    section = html[html.index(f"<h3>{comp['treatment']} − {comp['control']}</h3>"):]
    order = [section.index(f'<td class="l">{name}</td>') for name in
             ("Recall", "Precision", "False positive rate", "Alert rate")]
    assert order == sorted(order)


LAYOUT_CHECK = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="%(src)s" style="width:%(width)dpx;height:3000px;border:0"></iframe>
<script>
window.addEventListener('load', function () {
  var d = document.getElementById('f').contentDocument, W = d.documentElement.clientWidth, bad = [];
  d.querySelectorAll('body *').forEach(function (el) {
    if (el.closest('.scroll') && !el.classList.contains('scroll')) return;  // inside a scrolling block
    var r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > W + 1) bad.push(el.tagName + ':' + Math.round(r.right));
  });
  var wrapped = [];  // cells holding `value [lo, hi]` laid out on more than one line
  d.querySelectorAll('td').forEach(function (td) {
    if (!/\\[[^\\]]*,[^\\]]*\\]/.test(td.textContent) || td.classList.contains('l')) return;
    var range = d.createRange();
    range.selectNodeContents(td);
    var tops = {};
    Array.prototype.forEach.call(range.getClientRects(), function (r) { if (r.width > 0) tops[Math.round(r.bottom)] = 1; });
    if (Object.keys(tops).length > 1) wrapped.push(td.textContent.trim().slice(0, 40));
  });
  var charts = Array.prototype.map.call(d.querySelectorAll('#trends ~ .scroll, .charts img'), function (el) {
    var r = el.getBoundingClientRect();
    return el.tagName === 'IMG' ? {w: Math.round(r.width), natural: el.naturalWidth, right: Math.round(r.right)} : null;
  }).filter(function (c) { return c; });
  var targets = Array.prototype.map.call(d.querySelectorAll('#headline-table td[data-label="target"]:not(.empty)'), function (td) {
    var r = td.getBoundingClientRect();
    return {right: Math.round(r.right), visible: r.width > 0};
  });
  var clipped = [];  // a headline card's target or triggers line running past its card (cut off on a phone)
  d.querySelectorAll('#headline-table td[data-label]').forEach(function (td) {
    var range = d.createRange(), box = td.getBoundingClientRect();
    range.selectNodeContents(td);
    Array.prototype.forEach.call(range.getClientRects(), function (r) {
      if (r.width > 0 && r.right > box.right + 1) clipped.push(td.textContent.trim().slice(-40));
    });
  });
  var scrolling = [];  // the sections whose tables are wider than their block (they scroll sideways)
  d.querySelectorAll('.scroll').forEach(function (box) {
    if (box.scrollWidth <= box.clientWidth + 1) return;
    var el = box;
    while (el && el.tagName !== 'H2') el = el.previousElementSibling;
    scrolling.push(el ? el.id : '?');
  });
  var hidden = [];  // after scrolling each wide table fully to the right, its rows' first cells must still show
  d.querySelectorAll('.scroll').forEach(function (box) {
    if (box.scrollWidth <= box.clientWidth + 1) return;
    box.scrollLeft = box.scrollWidth;
    var b = box.getBoundingClientRect();
    box.querySelectorAll('tr > :first-child').forEach(function (cell) {
      var r = cell.getBoundingClientRect();
      if (r.width > 0 && (r.left < b.left - 1 || r.right > b.right + 1)) hidden.push(cell.textContent.trim().slice(0, 30));
    });
  });
  // line breaks inside a word (between letters, digits or `_`: not after `_`, `.`, `-`), and those after a separator
  var midword = [], atsep = [];
  var walker = d.createTreeWalker(d.body, NodeFilter.SHOW_TEXT), prev = null, word = '';
  while (walker.nextNode()) {
    var node = walker.currentNode, block = node.parentElement.closest('td,th,p,li,dd,dt,h1,h2,h3,div,nav');
    for (var i = 0; i < node.data.length; i++) {
      var ch = node.data[i];
      if (/\\s/.test(ch)) { prev = null; word = ''; continue; }
      var range = d.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      var r = range.getBoundingClientRect();
      if (r.width === 0) continue;
      if (prev && prev.block === block && r.top > prev.top + prev.height / 2) {
        if ('_.-'.indexOf(prev.ch) >= 0) atsep.push(word + '|' + ch);
        else if (/\\w/.test(prev.ch) && /\\w/.test(ch)) midword.push(word + '|' + ch);
      }
      if (!prev || prev.block !== block) word = '';
      word += ch;
      prev = {ch: ch, top: r.top, height: r.height, block: block};
    }
  }
  var out = document.createElement('pre');
  out.id = 'layout';
  out.textContent = JSON.stringify({width: W, scroll: d.documentElement.scrollWidth, overflowing: bad.slice(0, 20),
                                    body: d.body.scrollWidth, wrapped: wrapped.slice(0, 20), charts: charts,
                                    targets: targets, hidden: hidden.slice(0, 20), clipped: clipped.slice(0, 20),
                                    midword: midword.slice(0, 20), atsep: atsep.slice(0, 50), scrolling: scrolling});
  document.body.appendChild(out);
});
</script></body></html>"""
"""A page showing the report in a frame of the given width, and after layout writing the frame's width, its
document's scroll width and the elements (outside scrolling blocks) that reach past its right edge."""


def _layout(chromium: str, page: Path, width: int, tmp: Path) -> dict[str, Any]:
    frame = tmp / f"frame-{width}-{page.stem}.html"
    frame.write_text(LAYOUT_CHECK % {"src": page.name, "width": width})
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
             "--allow-file-access-from-files", "--hide-scrollbars", f"--user-data-dir={tmp / 'profile'}",
             "--window-size=1400,2000"]
    res = subprocess.run([chromium, *flags, "--dump-dom", frame.resolve().as_uri()], capture_output=True, text=True,
                         timeout=90)
    m = re.search(r'<pre id="layout">(.*?)</pre>', res.stdout, re.S)
    assert res.returncode == 0 and m is not None, res.stderr[-2000:]
    return json.loads(m.group(1))


@pytest.mark.parametrize("width", [1280, 390])
def test_report_fits_desktop_and_phone_widths(report: dict[str, Any], tmp_path: Path, width: int) -> None:
    """Laid out by headless Chromium at 1280 px and at a phone's 390 px, the page is no wider than the screen and
    no element sticks out (wide tables scroll inside their own block, plots shrink); interval cells never wrap;
    the three trend charts are separate images at least 300 px wide; every headline target is on screen (cards on
    a phone). The same check on the page without its scrolling blocks finds the overflowing tables, so it can
    fail."""
    chromium = require_binary("chromium")
    html = Path(report["paths"]["html"]).read_text()
    page = tmp_path / "report.html"
    page.write_text(html)
    got = _layout(chromium, page, width, tmp_path)
    assert got["width"] == width and got["scroll"] <= width and got["overflowing"] == [], got
    assert got["body"] <= width, got  # no horizontal overflow of the page body
    # issue 17: `value [lo, hi] n` cells stay on one line (their table scrolls instead)
    assert got["wrapped"] == [], got["wrapped"]
    # the trend charts are separate images, each at least 300 px wide on the screen (legible), none cut off
    assert len(got["charts"]) == 3 and all(c["natural"] >= 300 for c in got["charts"]), got["charts"]
    assert all(c["right"] <= width and c["w"] >= min(300, width - 40) for c in got["charts"]), got["charts"]
    # the headline's target is on screen next to its value, not off to the right of a scrolling table
    assert got["targets"] and all(t["visible"] and t["right"] <= width for t in got["targets"]), got["targets"]
    # tryout: a wide table scrolled sideways hid its key column (recall's row name, the day); it stays in view
    assert got["hidden"] == [], got["hidden"]
    # user tryout: at 390 px the card's target line ran past it ("…recall_below_target): m"); it wraps in its card
    assert got["clipped"] == [], got["clipped"]
    # user tryout: at 390 px names broke mid-word ('recall_below_tar|get', a first column's 'th|r|e|s|h|o|l|d')
    assert got["midword"] == [], got["midword"]
    if width == 1280:  # tryout: the A/B arms table (and nearly the slices') scrolled, its alert rate cut at the edge
        assert not {"slices", "ab"} & set(got["scrolling"]), got["scrolling"]
    if width == 390:
        _long_identifiers_wrap_at_separators(chromium, report, tmp_path)
        # targets taken from triggers read "at least 0.70 (trigger recall_below_target): missed", too long for a line
        from driftline.reports.plots import all_plots
        from driftline.reports.render import render_html

        doc = json.loads(json.dumps(report["report"]))
        for r in doc["headline"]["rows"]:
            if r["target"] and r["triggers"]:
                r["target"]["source"] = f"trigger {r['triggers'][0]}"
        long_html = render_html(doc, all_plots(doc))
        assert "(trigger recall_<wbr>below_<wbr>target):" in long_html  # <wbr>: breaks after `_` (see below)
        triggered = tmp_path / "triggered.html"
        triggered.write_text(long_html)
        assert _layout(chromium, triggered, width, tmp_path)["clipped"] == []
        unwrapping = tmp_path / "clipping.html"  # target lines kept on one line: the check sees them cut off
        unwrapping.write_text(long_html.replace("table.cards td[data-label] { white-space: normal;",  # (Chromium
                                                "table.cards td[data-label] { white-space: nowrap;")  # breaks at a
                              .replace("<wbr>", ""))  # <wbr> even under nowrap: without them, as before)
        assert _layout(chromium, unwrapping, width, tmp_path)["clipped"]
        keyless = tmp_path / "keyless.html"  # without the sticky first column the check sees hidden keys
        keyless.write_text(html.replace("position: sticky; left: 0;", ""))
        assert _layout(chromium, keyless, width, tmp_path)["hidden"]
        broken = tmp_path / "unwrapped.html"
        broken.write_text(html.replace('<div class="scroll"><table', "<table").replace("</table></div>", "</table>"))
        bad = _layout(chromium, broken, width, tmp_path)
        assert bad["scroll"] > width and any(e.startswith("TABLE") for e in bad["overflowing"]), bad
        wrapping = tmp_path / "wrapping.html"  # without the nowrap rule intervals wrap, and the check sees it
        wrapping.write_text(html.replace("td:not(.l) { white-space: nowrap; }", ""))
        assert _layout(chromium, wrapping, width, tmp_path)["wrapped"]


def _long_identifiers_wrap_at_separators(chromium: str, report: dict[str, Any], tmp_path: Path) -> None:
    """A long trigger name and a long feature name (in the summary, the headline card, the triggers, drift and
    slices tables) wrap after `_`, `.` or `-` at 390 px, never mid-word; the same page without its `<wbr>`s, or with
    `overflow-wrap: anywhere` back in the first column, is seen breaking names mid-word (the check can fail)."""
    from driftline.reports.plots import all_plots
    from driftline.reports.render import render_html

    trigger, feature = "recall_below_target_for_card_not_present_transactions", "sales_channel.code-from_acquirer"
    text = json.dumps(report["report"]).replace("recall_below_target", trigger)
    assert text.count('"channel"') == 1  # the declared feature, in the drift table
    doc = json.loads(text.replace('"channel"', json.dumps(feature)))
    html = render_html(doc, all_plots(doc))
    assert f'<td class="l">{trigger[:13].replace("_", "_<wbr>")}' in html  # the triggers table's first column
    assert '<td class="l">sales_<wbr>channel.<wbr>code-<wbr>from_<wbr>acquirer</td>' in html  # the drift table's
    page = tmp_path / "identifiers.html"
    page.write_text(html)
    got = _layout(chromium, page, 390, tmp_path)
    assert got["midword"] == [], got["midword"]
    assert any(w.startswith("recall_below_") for w in got["atsep"]), got["atsep"]  # it did wrap, at a separator
    assert any(w.startswith("sales_") for w in got["atsep"]), got["atsep"]
    plain = tmp_path / "no-wbr.html"
    plain.write_text(html.replace("<wbr>", ""))
    assert any("below" in w for w in _layout(chromium, plain, 390, tmp_path)["midword"])
    squeezed = tmp_path / "anywhere.html"
    squeezed.write_text(html.replace("max-width: 40vw; overflow-wrap: break-word;",
                                     "max-width: 40vw; overflow-wrap: anywhere;"))
    assert _layout(chromium, squeezed, 390, tmp_path)["midword"]


def test_plot_legends_hide_no_curve_and_name_every_trigger_line(report: dict[str, Any]) -> None:
    """Threshold plot: the legend lies below the axes (it hid the total-cost curve between 0.5 and 0.65) and names
    the domain's words; trends plot: one legend naming every trigger line, the FPR one included."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from driftline.reports.plots import threshold_figure, trends_figure

    doc = report["report"]
    fig = threshold_figure(doc)
    assert fig is not None
    renderer = FigureCanvasAgg(fig).get_renderer()  # the same Agg renderer that draws the PNG
    ax = fig.axes[0]
    legend = ax.get_legend()
    box, axes_box = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
    assert box.y1 <= axes_box.y0  # entirely below the plotting area
    labels = [t.get_text() for t in legend.get_texts()]
    assert "total cost / month" in labels and "fraud lost / month" in labels and "analyst hours / month" in labels
    names = []
    for key in ("recall", "fpr", "precision"):  # one chart per metric, each with its own legend below its axes
        trends = trends_figure(doc, key)
        assert trends is not None and len(trends.axes) == 1
        legend = trends.axes[0].get_legend()
        renderer = FigureCanvasAgg(trends).get_renderer()
        assert legend.get_window_extent(renderer).y1 <= trends.axes[0].get_window_extent(renderer).y0
        names += [t.get_text() for t in legend.get_texts()]
    assert "trigger fpr_above_target (fpr > 0.08)" in names and "trigger recall_below_target (recall < 0.70)" in names  # the agreed line as written everywhere


def test_matured_check_says_not_contradicted_and_names_metrics_outside_their_interval(report: dict[str, Any]) -> None:
    """Second tryout: the report said 'matured labels agree with the estimate' while `calibration` showed recall
    and prevalence outside its interval: the contradiction rule is 3 sd, the interval 95 %; the report says both."""
    import copy

    from driftline.reports.plots import all_plots
    from driftline.reports.render import render_html

    doc = copy.deepcopy(report["report"])
    ce = doc["calibration"]["document"]["calibrated"]
    assert ce is not None
    ce["matured"] = {"contradicted": False, "metrics": [
        {"metric": "recall", "within_interval": False}, {"metric": "fpr", "within_interval": True},
        {"metric": "prevalence", "within_interval": False}]}
    html = render_html(doc, all_plots(doc))
    text = " ".join(re.sub(r"<[^>]+>", "", html).split())
    assert "matured labels do not contradict the estimate (no realised value more than 3 sd from it); outside " \
           "its 95 % interval: Recall, Prevalence." in text, text[text.find("matured labels") - 20:][:300]
    assert "agree with the estimate" not in text


def test_multivariate_line_reads_like_the_terminal(report: dict[str, Any]) -> None:
    """Second tryout: the terminal said 2.6375 vs 2.5194 (ratio 1.0469, floor ±0.0932), the report 2.638 vs 2.519:
    statistics have 4 decimals everywhere (numbers.stat)."""
    from driftline.reports.render import render_markdown

    import copy

    doc = copy.deepcopy(report["report"])
    mv = doc["drift"]["document"]["multivariate"]
    mv.update({"drifted": False, "error": 2.63754, "reference_error": 2.51941, "ratio": 1.04689, "noise_floor": 0.09321,
               "p_value": 0.2, "components": 3, "columns": ["a", "b", "c", "d"], "alpha": 0.01,
               "n": {"window": 256, "reference_calibration": 512}})
    md = " ".join(render_markdown(doc).split())
    assert (f"this week {mv['error']:.4f} vs reference {mv['reference_error']:.4f} (ratio {mv['ratio']:.4f}, "
            f"noise floor ±{mv['noise_floor']:.4f})") in md


def test_the_ab_cost_row_names_its_own_interval_method(report: dict[str, Any]) -> None:
    """The comparison table's interval column said "95 % (Newcombe)" over the cost row too, whose interval is the
    mid-p score interval per arm combined by MOVER (or the paired bootstrap in shadow mode): the row names its
    method, the header says Newcombe is for the rates."""
    comps = [c for c in report["report"]["ab"]["document"]["comparisons"] if c.get("cost_per_1000")]
    assert comps, "the fixture's week has an A/B comparison with costs"
    html = Path(report["paths"]["html"]).read_text()
    assert "95 % (Newcombe)" not in html and "95 % (rates: Newcombe)" in html
    method = comps[0]["cost_per_1000"]["method"]
    assert method == "mid_p_mover" and "cost / 1,000 (mid-p, MOVER)" in html
