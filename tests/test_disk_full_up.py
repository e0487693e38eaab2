"""A database that answers reads but refuses writes (the SQLite file's disk full, a read-only file or server) stops
ingestion: `run` holds the batch and retries, /readyz is 503. Soak tryout (SQLite on a full 20 MB tmpfs): /readyz said
only "database unavailable: consuming paused, batch held" and `driftline_database_up` stayed 1, because its probe only
reads, so DriftlineDatabaseUnreachable never fired while nothing was stored. Now /readyz names the error and
`driftline_database_up` is 0 until a write commits again; once space returns everything is stored once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event

from driftline.exporter.dbstate import DatabaseProbe, DatabaseUp
from driftline.storage.store import Store
from kafka_service_support import assert_same_state, documents, make_events
from test_kafka_loop import Clock, member, partitioned, replayed, total


def _database_up(store: Store, write_failure: Any) -> float:
    """driftline_database_up as a scrape would export it (the read probe run once, here)."""
    probe = DatabaseProbe(store)
    probe.result = probe.probe()
    probe.checked.set()
    (family,) = DatabaseUp(probe, store.calls, 30.0, write_failure).collect()
    return float(family.samples[0].value)


def test_a_full_disk_is_named_by_readyz_and_sets_database_up_to_zero(tmp_path: Path) -> None:
    events = make_events(tmp_path, days=1.0, per_day=1500)
    store = Store(f"sqlite:///{tmp_path / 'live.db'}")
    store.migrate()
    logs = partitioned(events.records)
    clock = Clock()
    lc, fake = member(store, logs, clock, batch=100)
    fake.rebalance(set(logs))
    for _ in range(6):  # each partition read once before any is stored (event-time alignment: kafka/alignment.py)
        lc.step()
        if total(store):
            break
    assert 0 < total(store) < len(events.records)
    with store.read() as conn:
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar()
    cap = {"pages": pages}  # SQLite answers "database or disk is full" past max_page_count, as on a full disk

    def capped(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
        dbapi_conn.execute(f"PRAGMA max_page_count={cap['pages']}")

    event.listen(store.engine, "checkout", capped)
    for _ in range(40):
        lc.step()
        clock.t += 1.1
        if lc.held is not None:
            break
    assert lc.held is not None and fake.paused == fake.assigned
    ok, why = lc.ready()
    assert not ok and "database or disk is full" in why, why
    assert _database_up(store, None) == 1.0  # reads still work: the read probe alone said up
    assert _database_up(store, lc.write_failure) == 0.0
    stuck = total(store)
    cap["pages"] = 1 << 30  # space returns
    for _ in range(300):
        lc.step()
        clock.t += 1.1
        if total(store) == len(events.records):
            break
    assert total(store) == len(events.records) > stuck
    assert lc.write_failure() is None and lc.ready()[0]
    assert _database_up(store, lc.write_failure) == 1.0
    assert_same_state(documents(store.url), replayed(tmp_path, events))
    event.remove(store.engine, "checkout", capped)
    store.close()
