"""`driftline run`: exporter + trigger evaluation (Service) next to the live consumer, until SIGTERM/SIGINT.

The exporter starts first so /healthz answers and /readyz explains while the database or the broker is still
unreachable; the schema is migrated with retries (serialised across replicas by the store's write lock); only then
do scrapes read the store, the scheduler start (trigger evaluation, weekly-report catch-up) and the consumer
connect (retrying) and consume.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy.exc import InterfaceError, OperationalError, SQLAlchemyError

from ..config import Config
from ..exporter.early import EarlyListener
from ..ops import OpsMetrics
from ..ingest.pipeline import Pipeline
from .process import Service
from ..storage import calls
from ..storage.errors import StoreUnavailable, WriteLocked
from ..storage.lock_holder import write_lock_holder
from ..storage.store import Store
from ..kafka.consumer import LiveConsumer
from ..kafka.health import Backoff
from ..kafka.faults import Faults
from ..kafka.settings import KafkaSettings, install_log_redaction
from ..streak import REPEAT_EVERY_S

log = logging.getLogger(__name__)


START_RETRY_CAP_S = 2.0
"""Longest wait between start-up migration attempts while the database is unreachable (on-call tryout: at 15 s a
`run` restarted during a PostgreSQL outage resumed up to ~20 s after the database came back, /readyz meanwhile
showing the old error). A connection attempt every 2 s is what the exporter's readiness probe costs already."""


def migrate_with_retry(store: Store, stop: threading.Event, backoff: Backoff | None = None,
                       on_wait: Callable[[str], None] | None = None, max_other_errors: int = 5,
                       on_first: Callable[[], None] | None = None,
                       monotonic: Callable[[], float] = time.monotonic) -> bool:
    """Migrate the schema, retrying while the database is unreachable; False when stopped first.

    Other database errors (two replicas migrating at once) are retried a few times, then raised. `on_first` is
    called once, after the first attempt unless it raised (a database that does not exist raises NotADatabase):
    the start banner goes there, so such a typo is the `error:` line alone, at no extra connection. Waits between
    attempts are bounded by START_RETRY_CAP_S; the outage is logged when it starts or its error changes, every
    REPEAT_EVERY_S while it lasts, and once when the database answers again.
    """
    backoff = backoff or Backoff(0.5, START_RETRY_CAP_S)
    other = 0
    since = logged = 0.0
    last = ""
    while not stop.is_set():
        try:
            store.migrate()
            if on_first is not None:
                on_first()
            if backoff.attempts:
                log.warning("database reachable again after %.0fs (%d attempts): schema migrated or current",
                            monotonic() - since, backoff.attempts)
            return True
        except (OperationalError, InterfaceError, StoreUnavailable) as err:
            why = key = str(err).splitlines()[0]
            holder = write_lock_holder(store) if isinstance(err, WriteLocked) else None
            why += "" if holder is None else f" (held by {holder.describe()})"  # who, so the on-call can act
            key += "" if holder is None else f" (held by pid {holder.pid})"  # not its ages, new at every attempt
        except SQLAlchemyError as err:
            other += 1
            if other > max_other_errors:
                raise
            why = key = str(err).splitlines()[0]
        if on_first is not None:
            on_first()
            on_first = None
        delay, now = backoff.next(), monotonic()
        if backoff.attempts == 1:
            since = now
        if key != last:  # the same error, the same holder: one line (SRE tryout: the holder's ages made each new)
            log.warning("database unavailable while migrating (%s); retrying every %.0fs at most (logged again "
                        "every %.0fs while it lasts)", why, backoff.cap, REPEAT_EVERY_S)
            last, logged = key, now
        elif now - logged >= REPEAT_EVERY_S:
            log.warning("database still unavailable while migrating, %d attempts in %.0fs: %s", backoff.attempts,
                        now - since, why)
            logged = now
        if on_wait is not None:
            on_wait(why)
        stop.wait(delay)
    return False


def freeze_startup_heap() -> None:
    """Move everything alive after start-up (modules, matplotlib for reports, SQLAlchemy, kafka-python) out of the
    cyclic collector's reach: each batch leaves tens of thousands of survivors, and every full collection they
    trigger would otherwise walk the whole start-up heap again. Garbage is collected first, so nothing leaks."""
    gc.collect()
    gc.freeze()


def run_service(config: Config, db_url: str, settings: KafkaSettings, stop: threading.Event, *,
                host: str | None = None, port: int | None = None, evaluate: bool = True,
                maintain_every_s: float = 30.0, clock: Callable[[], float] = time.time,
                announce: Callable[[str], None] | None = None, keep_model: bool = False,
                listening: EarlyListener | None = None) -> None:
    """Serve the exporter and consume until `stop` is set; raises TopicsError for unusable topics. `keep_model`:
    the config file names its `model:` (kept a slot under limits.max_models). `listening`: the exporter's socket,
    bound when the process started (exporter/early.py)."""
    install_log_redaction(settings)
    store = Store(db_url, clock=clock, lock_timeout_s=settings.lock_wait_s,  # waits in slices, polling between
                  sqlite_cache_mb=config.storage.sqlite_cache_mb)
    ops = OpsMetrics()
    pipeline = Pipeline(config, store, clock=clock, keep_model=keep_model)
    consumer = LiveConsumer(pipeline, settings, stop, ops=ops, faults=Faults.from_env(),
                            maintain_every_s=maintain_every_s)
    service = Service(config, store, clock=clock, ops=ops, readiness=consumer.ready, host=host, port=port,
                      evaluate=evaluate, jobs=True, jobs_maintain=False,
                      stall_s=settings.database_stall_s,  # the consumer maintains its partitions
                      write_failure=consumer.write_failure, listening=listening)
    service.start_exporter()  # /healthz and /readyz answer while the database is unreachable or migrating

    def banner() -> None:  # after the first migration attempt: not above the error of a database that does not exist
        if announce is not None:
            announce(f"driftline run: {settings.describe()}; exporter {service.url}/metrics")

    stopped = threading.Event()  # a stop does not wait for a database call a dead peer never answers
    threading.Thread(target=calls.break_calls_when_stopped, args=(store.calls, stop, stopped),
                     name="driftline-stop-pings", daemon=True).start()
    try:
        consumer.status.phase = "waiting for the database"

        def waiting(why: str) -> None:
            consumer.status.error = why

        if not migrate_with_retry(store, stop, on_wait=waiting, on_first=banner):
            return
        consumer.status.phase = "starting"  # the database is fine now: /readyz says "kafka starting", not "waiting"
        consumer.status.error = ""  # nor the outage's error while the jobs start (on-call tryout: seconds of it)
        service.start_jobs()  # only now: the scheduler's catch-up and the scrapes need the tables
        freeze_startup_heap()
        consumer.run()
    finally:
        consumer.close()
        service.stop()
        stopped.set()
        store.close()
