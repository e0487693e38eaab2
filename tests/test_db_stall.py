"""SRE tryout: PostgreSQL behind a proxy that stops relaying without closing anything (`kill -STOP` on it).

/readyz and /metrics used to query the database in the request thread and hung for the whole stall, /healthz said
ok and nothing was logged. Now /readyz answers 503 from published state, naming the stalled call, /metrics fails
fast instead of hanging, a warning is logged, and everything recovers when the proxy relays again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import event, text

from http_probe import http_get
from driftline.exporter.http import ExporterServer, build_registry
from driftline.exporter.collector import SnapshotCollector
from driftline.config import Config
from driftline.storage.errors import StoreUnavailable
from driftline.storage.store import Store

from kafka_service_support import wait_until

pytestmark = pytest.mark.postgres


def test_paused_proxy_makes_readyz_503_naming_the_stalled_write_then_fails_it_and_recovers(pg_behind_forwarder, caplog) -> None:
    pg = pg_behind_forwarder
    store = Store(pg.url)
    store.migrate()
    config = Config(model="m")
    snapshot = SnapshotCollector(store, config, time.time, schema_ready=threading.Event())
    snapshot.schema_ready.set()
    server = ExporterServer(build_registry(snapshot, None), store, port=0, stall_s=2.0, scrape_timeout_s=3.0)
    server.start()
    caplog.set_level(logging.INFO, logger="driftline")
    written = threading.Event()
    try:
        wait_until(lambda: http_get(server.url + "/readyz")[0] == 200, 30, "/readyz 200 before the stall")
        with store.write() as conn:  # the pool holds a connection through the forwarder
            conn.execute(text("SELECT 1"))
        pg.forwarder.pause()

        failed: list[Exception] = []

        def write() -> None:
            try:
                with store.write() as conn:
                    conn.execute(text("SELECT 1"))
            except StoreUnavailable as err:
                failed.append(err)
            written.set()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        status, body = wait_until(lambda: (lambda r: r if r[0] == 503 and "not answering" in r[1] else None)(
            http_get(server.url + "/readyz")), 30, "/readyz 503 naming the stalled call")
        assert "has been waiting" in body, body  # names the call: the write, or the probe stalled with it
        assert http_get(server.url + "/healthz") == (200, "ok\n")  # liveness: the process itself is fine
        metrics = http_get(server.url + "/metrics")
        assert metrics[0] in (200, 503), metrics  # answers (fails fast), never a client timeout
        wait_until(lambda: any(r.levelno == logging.WARNING and r.getMessage().startswith("database not answering: a write")
                          for r in caplog.records), 30, "the stall warning")
        # the stalled ping is broken off: the write fails like one meeting a refused connection (held batch, retry)
        assert wait_until(written.is_set, 60, "the stalled write to fail")
        assert failed, "the write should have failed while the forwarder was paused"
        wait_until(lambda: any("stalled database write failed" in r.getMessage() for r in caplog.records), 10,
              "the end of the stall logged")
        pg.forwarder.resume()
        with store.write() as conn:
            conn.execute(text("SELECT 1"))
        wait_until(lambda: http_get(server.url + "/readyz")[0] == 200, 30, "/readyz 200 after resuming")
    finally:
        pg.forwarder.resume()
        server.stop()
        store.close()


def test_connection_parameters_default_keepalives_and_respect_the_url() -> None:
    from driftline.storage.pgconnect import timeout_args

    args = timeout_args("postgresql+psycopg://u@h/db")
    assert args["keepalives"] == 1 and args["keepalives_idle"] > 0 and args["connect_timeout"] > 0
    mine = timeout_args("postgresql+psycopg://u@h/db?keepalives_idle=120&connect_timeout=3")
    assert "keepalives_idle" not in mine and "connect_timeout" not in mine and mine["keepalives_count"] > 0


def test_write_lock_wait_is_not_a_stall_until_its_grace_is_over() -> None:
    from driftline.storage.calls import DbCalls

    now = [100.0]
    calls = DbCalls(monotonic=lambda: now[0])
    calls.begin("write")
    calls.step("the write lock", grace=30.0)
    now[0] += 40.0
    assert calls.stalled(15.0) is None  # waiting for another writer's lock, within the lock timeout + 15 s
    now[0] += 10.0
    stalled = calls.stalled(15.0)
    assert stalled is not None and calls.describe(stalled) == "a write has been waiting 50s for the write lock"
    calls.idle()
    assert calls.stalled(0.0) is None  # the database answered: computing is no wait
    calls.end(ok=True)
    assert calls.last_ok == now[0]


def test_a_call_inside_another_ends_only_itself() -> None:
    from driftline.storage.calls import DbCalls

    now = [0.0]
    calls = DbCalls(monotonic=lambda: now[0])
    calls.begin("write")
    calls.step("a statement")
    calls.begin("leader-lock check")
    calls.end(ok=True)
    now[0] += 60.0
    stalled = calls.stalled(30.0)
    assert stalled is not None and stalled.kind == "write"


def test_cli_store_warns_about_a_stalled_statement_and_says_when_it_answers(pg_behind_forwarder, caplog) -> None:
    """SRE tryout: `driftline replay` against a stopped proxy printed nothing until the database answered; the
    CLI's store now runs the stall watch of run/serve (kafka.database_stall), so stderr names the call, then its end."""
    import io

    from rich.console import Console

    from driftline.config import Kafka
    from driftline.context import Context

    pg = pg_behind_forwarder
    ctx = Context(config=Config(model="m", kafka=Kafka(database_stall="1s")), db_url=pg.url,
                  console=Console(file=io.StringIO()), err=Console(file=io.StringIO()))
    caplog.set_level(logging.INFO, logger="driftline")
    in_transaction, done, failed = threading.Event(), threading.Event(), []

    def write() -> None:
        try:
            with ctx.store().write() as conn:
                conn.execute(text("SELECT 1"))
                in_transaction.set()
                pg.forwarder.pause()  # mid-transaction: the next statement waits on a peer that never answers
                conn.execute(text("SELECT 2"))
        except Exception as err:  # noqa: BLE001 - reported by the assertion below
            failed.append(err)
        done.set()

    writer = threading.Thread(target=write, daemon=True)
    try:
        writer.start()
        wait_until(in_transaction.is_set, 60, "the write transaction to start")
        warned = wait_until(lambda: [r for r in caplog.records if r.levelno == logging.WARNING
                                     and r.getMessage().startswith("database not answering: a write")], 30,
                            "the stall warning from the CLI's store")
        assert "for a statement" in warned[0].getMessage() and "has been waiting" in warned[0].getMessage()
        pg.forwarder.resume()
        wait_until(done.is_set, 30, "the write to finish once the proxy relays again")
        assert not failed, failed
        wait_until(lambda: any(r.levelno == logging.WARNING and r.getMessage().startswith(
            "database answered again: a write waited") for r in caplog.records), 10, "the end of the stall logged")
    finally:
        pg.forwarder.resume()
        ctx.close()


def _broken_off_at_stop(store: Store, pg: Any, write: Callable[[list[BaseException]], None], what: str,
                        caplog: Any) -> tuple[list[BaseException], list[str]]:
    """Run `write` (it appends its error) in a thread while the stop breaker runs (0.5 s limit); once the call is
    seen stalled, stop: the writer must end (the join is a hang guard). (its errors, the 'stopping: closing' lines)."""
    from driftline.storage.calls import break_calls_when_stopped

    stop, stopped, failed = threading.Event(), threading.Event(), []
    writer = threading.Thread(target=write, args=(failed,), daemon=True)
    breaker = threading.Thread(target=break_calls_when_stopped, args=(store.calls, stop, stopped),
                               kwargs={"limit_s": 0.5, "every_s": 0.1}, daemon=True)
    try:
        writer.start()
        breaker.start()
        wait_until(lambda: store.calls.stalled(0.5) is not None, 30, f"the {what} to be seen stalled")
        stop.set()
        writer.join(60.0)
        assert not writer.is_alive(), f"the stop did not break off the stalled {what}"
        return failed, [r.getMessage() for r in caplog.records if r.getMessage().startswith(
            "stopping: closing a database connection that has not answered for more than 0.5s")]
    finally:
        stopped.set()
        pg.forwarder.resume()
        store.close()


@pytest.mark.parametrize("stalled", ["statement", "ping"])
def test_a_stop_breaks_off_a_database_call_a_stopped_proxy_never_answers(pg_behind_forwarder, caplog,
                                                                         stalled: str) -> None:
    """SRE tryout: SIGTERM to `run` behind a PostgreSQL proxy stopped with kill -STOP: a batch's statement stalled
    meanwhile held the stop for good (killed after 120 s; statements are only reported, never broken off), a
    checkout ping for kafka.database_stall (45 s in all). Once stopping, `run`'s thread breaks off any call
    unanswered for STOP_WAIT_S: the caller gets an error (the outage path: the batch is held, read again at the next
    start). The joins are hang guards (a ping is broken off after database_stall, 30 s, without the fix)."""
    pg = pg_behind_forwarder
    store = Store(pg.url)
    store.migrate()
    caplog.set_level(logging.INFO, logger="driftline")
    started = threading.Event()

    def write(failed: list[BaseException]) -> None:
        try:
            if stalled == "ping":
                pg.forwarder.pause()  # the pooled connection's checkout ping waits on a peer that never answers
            with store.write() as conn:
                conn.execute(text("SELECT 1"))
                started.set()
                pg.forwarder.pause()  # mid-transaction: the next statement waits on a peer that never answers
                conn.execute(text("SELECT 2"))
        except Exception as err:  # noqa: BLE001 - asserted below
            failed.append(err)

    with store.read() as conn:  # a pooled connection for the ping to check
        conn.execute(text("SELECT 1"))
    failed, lines = _broken_off_at_stop(store, pg, write, stalled, caplog)
    assert failed and isinstance(failed[0], StoreUnavailable), failed
    assert lines
    assert stalled == "ping" or started.is_set()


def test_a_stop_breaks_off_a_rollback_a_stopped_proxy_never_answers(pg_behind_forwarder, caplog) -> None:
    """Verification tryout: once stopping, a statement or commit unanswered for STOP_WAIT_S is broken off, but a
    rollback was not: its step recorded no connection to break. A transaction whose body raises (StalePositions
    from the positions' compare-and-set, any error of the code in it) while the database has frozen sends a
    ROLLBACK that is never answered, and the stop waited for it for good. The join is a hang guard."""
    pg = pg_behind_forwarder
    store = Store(pg.url)
    store.migrate()
    caplog.set_level(logging.INFO, logger="driftline")

    def write(failed: list[BaseException]) -> None:
        try:
            with store.write() as conn:
                conn.execute(text("SELECT 1"))
                pg.forwarder.pause()  # the database freezes; the body fails: its rollback waits for ever
                raise ValueError("the transaction's own error")
        except Exception as err:  # noqa: BLE001 - asserted below
            failed.append(err)

    failed, lines = _broken_off_at_stop(store, pg, write, "rollback", caplog)
    assert failed, "the transaction should have failed"
    assert any("(a write has been waiting" in m and "the rollback" in m for m in lines), lines


def test_a_stop_breaks_off_a_copy_a_stopped_proxy_never_answers(pg_behind_forwarder, caplog) -> None:
    """Verification tryout: SIGTERM to `run` while its PostgreSQL backends were stopped (kill -STOP) hung for 60+ s
    in 1 of 11 tries, until they got SIGCONT. A batch's new rows are written by COPY on the driver connection, which
    fires no cursor event: the call recorded no step and no connection, so it was neither reported as stalled nor
    broken off at the stop. The join is a hang guard (without the fix the COPY is never seen as stalled)."""
    from driftline.storage.pgcopy import copy_rows

    pg = pg_behind_forwarder
    store = Store(pg.url)
    store.migrate()
    caplog.set_level(logging.INFO, logger="driftline")

    def freeze_after_savepoint(conn, cursor, statement, *args) -> None:  # type: ignore[no-untyped-def]
        if statement.startswith("SAVEPOINT"):  # copy_rows' own savepoint answered: the COPY comes next
            pg.forwarder.pause()  # the database freezes while the batch's rows are copied

    def write(failed: list[BaseException]) -> None:
        try:
            with store.write() as conn:
                conn.execute(text("CREATE TEMP TABLE copied (a text, b int8) ON COMMIT DROP"))
                event.listen(store.engine, "after_cursor_execute", freeze_after_savepoint)
                copy_rows(conn, "copied", "a, b", ("text", "int8"), [(f"row {i}", i) for i in range(20000)])
        except Exception as err:  # noqa: BLE001 - asserted below
            failed.append(err)

    failed, lines = _broken_off_at_stop(store, pg, write, "COPY", caplog)
    assert failed and isinstance(failed[0], StoreUnavailable), failed
    assert any("(a write has been waiting" in m and "a COPY" in m for m in lines), lines


def _read_blobs(conn: Any, store: Store) -> None:
    """A batch's bucket and sample blobs read on a driver cursor in binary format (storage/pgread.py)."""
    from driftline.storage.pgread import fetch_binary

    fetch_binary(conn, "SELECT data FROM buckets", ())


def _look_up_join_rows(conn: Any, store: Store) -> None:
    """A batch's two join lookups, sent in one psycopg pipeline (pgread.fetch_binary_all)."""
    from driftline.storage import bulk

    bulk.load_join(conn, "postgresql", [f"p{i}" for i in range(5000)])


def _write_batch_tail(conn: Any, store: Store) -> None:
    """The end of a batch's write (counters, newest times, positions, meta): one psycopg pipeline (storage/pgtail)."""
    from driftline.core.engine import EngineResult

    store.commit_batch(conn, EngineResult(counters={("events", "prediction"): 3}), [], {("file:x", 0): 7},
                       meta={"k": "v"})


@pytest.mark.parametrize("frozen", [_read_blobs, _look_up_join_rows, _write_batch_tail],
                         ids=["binary read", "pipelined lookups", "pipelined tail"])
def test_a_stop_breaks_off_a_driver_level_statement_a_stopped_proxy_never_answers(pg_behind_forwarder, caplog,
                                                                                  frozen: Any) -> None:
    """Statements sent on the driver's own cursor or pipeline fire no SQLAlchemy cursor event: the binary blob read,
    the pipelined join lookups, the pipelined end of a batch. Like the COPY, each is recorded as a statement, so it
    is reported when it stalls and broken off once stopping (without its driver_step it is never seen stalled: the
    join is the hang guard)."""
    pg = pg_behind_forwarder
    store = Store(pg.url)
    store.migrate()
    caplog.set_level(logging.INFO, logger="driftline")

    def write(failed: list[BaseException]) -> None:
        try:
            with store.write() as conn:
                conn.execute(text("SELECT 1"))
                pg.forwarder.pause()  # the database freezes while the call waits for its answer
                frozen(conn, store)
        except Exception as err:  # noqa: BLE001 - asserted below
            failed.append(err)

    failed, lines = _broken_off_at_stop(store, pg, write, frozen.__name__, caplog)
    assert failed and isinstance(failed[0], StoreUnavailable), failed
    assert any("(a write has been waiting" in m and "a statement" in m for m in lines), lines


def test_a_stop_breaks_off_a_new_connections_session_setup_a_stopped_proxy_never_answers(pg_behind_forwarder,
                                                                                          caplog) -> None:
    """pgtry tryout: every new PostgreSQL connection runs a query of its own before its first statement (the lz4
    session setting, storage/pgsession.py). A proxy that stops relaying right after the handshake (a stopped proxy,
    PgBouncer whose server froze) left that query waiting for good under the step "a connection" with no driver
    connection recorded, so a stop could not break it off (a connect alone is bounded by connect_timeout). The
    join is the hang guard: without the fix the writer never ends."""
    pg = pg_behind_forwarder
    store = Store(pg.url)
    store.migrate()
    caplog.set_level(logging.INFO, logger="driftline")
    held = store.engine.connect()  # the pooled connection is in use: the write must open a new one
    held.execute(text("SELECT 1"))
    event.listen(store.engine, "connect", lambda *_: pg.forwarder.pause(), insert=True)  # before the session setup

    def write(failed: list[BaseException]) -> None:
        try:
            with store.write() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as err:  # noqa: BLE001 - asserted below
            failed.append(err)

    try:
        failed, lines = _broken_off_at_stop(store, pg, write, "session setup", caplog)
    finally:
        held.invalidate()
    assert failed and isinstance(failed[0], StoreUnavailable), failed
    assert any("(a write has been waiting" in m for m in lines), lines
