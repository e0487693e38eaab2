"""Scheduled jobs: the weekly cron job's settings, a misfired weekly report runs once (and a restart's catch-up
adds nothing), two schedulers on PostgreSQL produce one report, maintenance, evaluation, bucket compaction."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import msgspec
import pytest
from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED

from driftline.storage.compaction import COMPACTED_SHARD, compact, compaction_cutoff
from driftline.config import Config, from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.readouts.metrics import MetricsQuery, metrics_document
from driftline.reports import table
from driftline.service.scheduler import (DONE, EXISTS, JOBS_LOCK_KEY, MISFIRE_GRACE_S, NOT_LEADER, JobScheduler, Jobs,
                                 build_scheduler)
from driftline.service.process import LOCK_KEY
from driftline.ingest.simulate import SimSpec, stream
from driftline.storage.store import Store
from driftline.triggers import history

DAY = 86400.0
WEEK_START = datetime(2025, 11, 17, tzinfo=timezone.utc).timestamp()  # Monday of 2025-W47
WEEK_END = WEEK_START + 7 * DAY
CLOCK = WEEK_END + 2 * DAY + 3600  # Wednesday: Monday 06:00's run was missed
CONFIG = from_dict({"triggers": [{"name": "recall_below_target", "metric": "recall", "op": "<", "value": 0.7,
                                  "window": "7d", "min_n": 5}]})


def ingest(store: Store, config: Config, start: float, days: float, per_day: int = 200,
           partitions: int = 1) -> None:
    enc = msgspec.json.Encoder()
    events = list(stream(SimSpec(start=start, days=days, per_day=per_day, drift_day=None, seed=11),
                         end=start + days * DAY))
    recs = [RawRecord("t", i % partitions, i, enc.encode(e)) for i, e in enumerate(events)]
    Pipeline(config, store, clock=lambda: CLOCK).process_batch(recs)


def wait_for(cond: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the scheduler")
        time.sleep(0.05)


def executed(js: JobScheduler) -> list[str]:
    """Ids of the jobs the scheduler ran (recorded by a listener; errors fail the test)."""
    seen: list[str] = []
    errors: list[Any] = []
    js.scheduler.add_listener(lambda e: (errors if e.exception else seen).append(e.job_id),
                              EVENT_JOB_EXECUTED | EVENT_JOB_ERROR)
    js.errors = errors  # type: ignore[attr-defined]
    return seen


def test_weekly_job_is_a_coalesced_utc_cron_with_generous_grace(tmp_path: Path) -> None:
    """Default '0 6 * * mon': next run Monday 06:00 UTC, coalesced, 6-day misfire grace; plus the other jobs."""
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    store.migrate()
    js = build_scheduler(store, CONFIG, lambda: CLOCK)
    jobs = {j.id: j for j in js.scheduler.get_jobs()}
    assert set(jobs) == {"weekly-report", "maintenance", "compaction", "evaluate"}
    weekly = jobs["weekly-report"]
    assert weekly.coalesce and weekly.misfire_grace_time == MISFIRE_GRACE_S == 6 * 86400
    assert weekly.max_instances == 1
    assert JOBS_LOCK_KEY == LOCK_KEY + 1  # never the Service's own evaluation lock
    after = datetime(2025, 11, 26, 12, 0, tzinfo=timezone.utc)  # a Wednesday
    assert weekly.trigger.get_next_fire_time(None, after) == datetime(2025, 12, 1, 6, 0, tzinfo=timezone.utc)
    assert str(weekly.trigger.timezone) == "UTC"
    js.shutdown()
    # on a scheduler it is given (the Service's), without evaluation (the Service evaluates itself)
    from apscheduler.schedulers.background import BackgroundScheduler

    shared = BackgroundScheduler(timezone=timezone.utc)
    shared.add_job(lambda: None, "interval", minutes=1, id="evaluate-triggers")
    js2 = build_scheduler(store, CONFIG, lambda: CLOCK, scheduler=shared, evaluate=False)
    assert {j.id for j in shared.get_jobs()} == {"evaluate-triggers", "weekly-report", "maintenance", "compaction"}
    assert not js2.owns
    store.close()


def test_misfired_weekly_report_runs_once_and_restart_adds_nothing(tmp_path: Path) -> None:
    """Monday 06:00 was missed (process down); on start the misfired run (within the grace) and the catch-up
    both fire, and one report exists; a restart's catch-up finds it and writes nothing."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = Store(url)
    store.migrate()
    ingest(store, CONFIG, WEEK_START, 7)
    out = tmp_path / "reports"
    js = build_scheduler(store, CONFIG, lambda: CLOCK, evaluate=False, report_dir=str(out))
    ran = executed(js)
    js.scheduler.start(paused=True)
    js.scheduler.modify_job("weekly-report", next_run_time=datetime.now(timezone.utc) - timedelta(days=2, hours=1))
    js.start(catch_up=True)
    js.scheduler.resume()
    wait_for(lambda: len(js.jobs.history) >= 2)
    js.shutdown()
    assert sorted(ran) == ["weekly-report", "weekly-report-catch-up"] and not js.errors  # type: ignore[attr-defined]
    assert sorted(o.status for o in js.jobs.history) == [DONE, EXISTS]
    assert [(r["model"], r["week"], r["source"]) for r in table.listing(store)] == [("fraud", "2025-W47", "scheduler")]
    html = out / "report-fraud-2025-W47.html"
    mtime = html.stat().st_mtime_ns
    store.close()

    store2 = Store(url)  # restart
    js2 = build_scheduler(store2, CONFIG, lambda: CLOCK + 3600, evaluate=False, report_dir=str(out))
    js2.start(catch_up=True)
    wait_for(lambda: len(js2.jobs.history) >= 1)
    js2.shutdown()
    assert [o.status for o in js2.jobs.history] == [EXISTS]
    assert len(table.listing(store2)) == 1 and html.stat().st_mtime_ns == mtime
    # a week without predictions is skipped, not reported
    nothing = Jobs(store2, CONFIG, lambda: CLOCK + 14 * DAY, report_dir=str(out)).weekly_report()
    assert nothing.status == "skipped" and nothing.detail["week"] == "2025-W49"
    store2.close()


@pytest.mark.postgres
def test_two_schedulers_on_postgresql_produce_one_report(pg_url: str, tmp_path: Path) -> None:
    """Two replicas start at once: only the advisory-lock holder runs the catch-up; one report is stored. When
    the leader stops, the other takes over and finds the report already there."""
    seed = Store(pg_url)
    seed.migrate()
    ingest(seed, CONFIG, WEEK_START, 7)
    seed.close()
    stores = [Store(pg_url), Store(pg_url)]
    scheds = [build_scheduler(s, CONFIG, lambda: CLOCK, evaluate=False, report_dir=str(tmp_path / f"r{i}"))
              for i, s in enumerate(stores)]
    barrier = threading.Barrier(2)

    def start(js: JobScheduler) -> None:
        barrier.wait()
        js.start(catch_up=True)

    threads = [threading.Thread(target=start, args=(js,)) for js in scheds]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wait_for(lambda: all(len(js.jobs.history) >= 1 for js in scheds))
    statuses = [js.jobs.history[0].status for js in scheds]
    assert sorted(statuses) == [DONE, NOT_LEADER]
    assert len(table.listing(stores[0])) == 1
    leader = statuses.index(DONE)
    other = scheds[1 - leader]
    assert (tmp_path / f"r{leader}" / "report-fraud-2025-W47.html").exists()
    assert not (tmp_path / f"r{1 - leader}").exists()
    assert other.jobs.weekly_report().status == NOT_LEADER
    scheds[leader].shutdown()
    # lock released: the other replica leads now (PostgreSQL frees a session lock when the backend has gone,
    # which on a loaded machine can take a moment after the client closed)
    wait_for(lambda: other.jobs.weekly_report().status == EXISTS)
    other.shutdown()
    assert len(table.listing(stores[1])) == 1
    for s in stores:
        s.close()


def test_maintenance_and_evaluation_jobs(tmp_path: Path) -> None:
    """Maintenance expires predictions past the label horizon (event time); evaluation stores trigger states."""
    config = msgspec.structs.replace(CONFIG, labels=from_dict({"labels": {"horizon": "2d"}}).labels)
    store = Store(f"sqlite:///{tmp_path / 'm.db'}")
    store.migrate()
    ingest(store, config, WEEK_START, 7)
    jobs = Jobs(store, config, lambda: WEEK_END, report_dir=str(tmp_path))
    m = jobs.maintain()
    assert m.status == DONE and m.detail["counts"]["expired_predictions"] > 0
    assert jobs.maintain().detail["counts"].get("expired_predictions", 0) == 0  # idempotent
    e = jobs.evaluate()
    assert e.status == DONE and e.detail["transitions"] == 1
    states = history.load_states(store, "fraud")
    assert states["recall_below_target"].state in ("ok", "firing", "pending")
    store.close()


def _window_doc(store: Store, config: Config, at: float, days: int) -> dict[str, Any]:
    return metrics_document(store, config, MetricsQuery("fraud", days * DAY, at=at))


def test_a_window_cutting_a_compacted_day_says_which_day_it_left_out(tmp_path: Path, capsys) -> None:
    """A compacted day cannot be split: a window starting (or ending) inside one leaves it out. It did so silently
    (the tryout: 13,850 labelled predictions, 11 % of the window, with window.start shown as asked); now the JSON
    names the day in window.cut_days and a note, and the terminal table prints the note."""
    from driftline.cli import main
    url = f"sqlite:///{tmp_path / 'cut.db'}"
    store = Store(url)
    store.migrate()
    ingest(store, CONFIG, WEEK_START, 3, per_day=300, partitions=2)
    compact(store, WEEK_START + 2 * DAY)
    whole = _window_doc(store, CONFIG, WEEK_START + 2 * DAY, 2)
    assert whole["window"]["cut_days"] == [] and "note" not in whole
    mid = metrics_document(store, CONFIG, MetricsQuery("fraud", 1.5 * DAY, at=WEEK_START + 2 * DAY))  # from 12:00
    assert mid["window"]["cut_days"] == ["2025-11-17T00:00:00Z"]
    assert "1 compacted day (2025-11-17) left out" in mid["note"]
    assert mid["counts"]["predictions"] == whole["counts"]["predictions"] - whole_day(store, WEEK_START)
    ends_inside = metrics_document(store, CONFIG, MetricsQuery("fraud", DAY, at=WEEK_START + 1.5 * DAY))
    assert ends_inside["window"]["cut_days"] == ["2025-11-17T00:00:00Z", "2025-11-18T00:00:00Z"]
    store.close()
    assert main(["--db", url, "metrics", "--window", "36h", "--at", str(WEEK_START + 2 * DAY)]) == 0
    out = capsys.readouterr().out
    assert "compacted day" in out and "2025-11-17" in out


def whole_day(store: Store, day: float) -> int:
    """Predictions of one compacted day row set (all versions and variants)."""
    return sum(r.stats.predictions for r in store.buckets("fraud", day, day + 1, features=False))


def test_compaction_merges_old_days_losslessly(tmp_path: Path) -> None:
    """Hourly buckets of two shards older than the cutoff become one shard −1 row per day and (version,
    variant); day-aligned windows give the same numbers; a second run does nothing; a late old write merges."""
    store = Store(f"sqlite:///{tmp_path / 'k.db'}")
    store.migrate()
    ingest(store, CONFIG, WEEK_START, 3, per_day=300, partitions=2)
    with store.engine.begin() as conn:  # odd hours to shard 1, as an older writer's own partition rows lie
        for name in ("buckets", "bucket_features"):
            conn.exec_driver_sql(f"UPDATE {name} SET shard = 1 WHERE bucket_start / 3600 % 2 = 1")
    cutoff = WEEK_START + 2 * DAY
    before_rows = store.buckets("fraud", WEEK_START, cutoff, features=False)
    assert len({r.shard for r in before_rows}) == 2 and len(before_rows) > 20
    docs = {(at, d): _window_doc(store, CONFIG, at, d) for at, d in ((cutoff, 2), (WEEK_START + DAY, 1),
                                                                    (WEEK_START + 3 * DAY, 3))}
    res = compact(store, cutoff)
    rows = store.buckets("fraud", WEEK_START, cutoff, features=False)
    groups = {(r.model_version, r.variant, r.bucket_start) for r in rows}
    assert {r.shard for r in rows} == {COMPACTED_SHARD} and len(rows) == len(groups) == res.groups == 2 * 2
    assert {r.bucket_start for r in rows} == {WEEK_START, WEEK_START + DAY}
    assert res.rows_before == len(before_rows)
    assert store.buckets("fraud", cutoff, cutoff + DAY, features=False)[0].shard != COMPACTED_SHARD
    for (at, d), doc in docs.items():
        after = _window_doc(store, CONFIG, at, d)
        assert after["counts"] == doc["counts"] and after["metrics"]["recall"] == doc["metrics"]["recall"]
        assert after["metrics"]["roc_auc"] == doc["metrics"]["roc_auc"]
        assert after["metrics"]["brier"]["value"] == pytest.approx(doc["metrics"]["brier"]["value"], rel=1e-12)
    assert compact(store, cutoff).groups == 0
    # a replayed old prediction lands in its hourly bucket next to the compacted day, and is merged next time
    late = {"type": "prediction", "prediction_id": "late-1", "model": "fraud", "model_version": "v1",
            "variant": "A", "ts": WEEK_START + 5 * 3600, "score": 0.9}
    Pipeline(CONFIG, store, clock=lambda: CLOCK).process_batch(
        [RawRecord("late", 0, 0, msgspec.json.encode(late))])
    n = docs[(cutoff, 2)]["counts"]["predictions"] + 1
    assert _window_doc(store, CONFIG, cutoff, 2)["counts"]["predictions"] == n
    assert compact(store, cutoff).groups == 1
    assert _window_doc(store, CONFIG, cutoff, 2)["counts"]["predictions"] == n
    assert len(store.buckets("fraud", WEEK_START, cutoff, features=False)) == 4
    # the scheduled cutoff: event-time watermark − label horizon − 1 day, floored to a day
    wm = max(store.newest_event("outcome") or 0.0, store.newest_event("prediction"))
    assert compaction_cutoff(store, 90 * DAY) == (int(wm - 91 * DAY) // 86400) * 86400
    store.close()


def test_a_failed_catch_up_is_retried_until_last_weeks_report_is_stored(tmp_path: Path) -> None:
    """Verification tryout: `run` started while another session held `LOCK TABLE predictions`; the start's weekly
    report catch-up failed ("scheduled job weekly_report failed ... a read waited more than 10s for a table lock")
    and was never tried again: the weekly cron reports the week after, so last week stayed without a report until
    a restart. A failed catch-up is now tried again (here after 0.05 s) until it is not failing."""
    from driftline.service.scheduler import FAILED, JobOutcome

    url = f"sqlite:///{tmp_path / 's.db'}"
    store = Store(url)
    store.migrate()
    ingest(store, CONFIG, WEEK_START, 7)
    js = build_scheduler(store, CONFIG, lambda: CLOCK, evaluate=False, report_dir=str(tmp_path / "reports"))
    js.catch_up_retry_s = 0.05
    real, calls = js.jobs.weekly_report, []

    def flaky() -> JobOutcome:
        calls.append(1)
        return JobOutcome("weekly_report", FAILED, {"error": "StoreUnavailable: locked"}) if len(calls) == 1 \
            else real()

    js.jobs.weekly_report = flaky  # type: ignore[method-assign]
    js.start(catch_up=True)
    wait_for(lambda: len(calls) >= 2 and table.listing(store))
    js.shutdown()
    assert [(r["week"], r["source"]) for r in table.listing(store)] == [("2025-W47", "scheduler")]
    store.close()
