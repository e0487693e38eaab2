"""The exporter's HTTP server: /metrics (snapshot + live ops metrics), /healthz, /readyz and /triggers (JSON).

Binds 127.0.0.1:9108 by default (config.exporter); binding elsewhere is an explicit choice in the config.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector
from sqlalchemy.exc import DBAPIError

from ..storage.calls import DEFAULT_STALL_S, StallWatch
from ..streak import FailureStreak
from .early import EarlyListener, HTTPServer
from ..storage.errors import SchemaMissing
from ..storage.store import Store
from .dbstate import MIGRATING, BoundedCall, DatabaseProbe, DatabaseUp, ScrapeTimeout, database_state
from .collector import SnapshotCollector
from ..ops import OpsMetrics

log = logging.getLogger(__name__)

Readiness = Callable[[], "tuple[bool, str]"]
"""A readiness check: (ready, reason), e.g. the Kafka consumer's 'assigned and caught up'."""


class _RegistryCollector(Collector):
    """Serves another registry's metrics (the process-local OpsMetrics) through the exporter registry, without the
    `<name>_created` samples prometheus_client adds to its counters and histograms.

    Those were undocumented series (`driftline_batch_duration_seconds_created`, `…_consumer_records_created`, …)
    that no rule or dashboard reads and the database-backed counters do not have (rate() and increase() see a
    counter reset without them; OpenMetrics makes them optional). prometheus_client only offers a process-global
    switch (disable_created_metrics, or an environment variable), so they are dropped here, per collector.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterable[Any]:
        for fam in self.registry.collect():
            created = fam.name + "_created"
            if not any(s.name == created for s in fam.samples):
                yield fam
                continue
            out = Metric(fam.name, fam.documentation, fam.type, fam.unit)
            out.samples = [s for s in fam.samples if s.name != created]
            yield out


def build_registry(snapshot: SnapshotCollector, ops: OpsMetrics | None) -> CollectorRegistry:
    """The registry /metrics serves: the database snapshot plus the live operational metrics."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(snapshot)
    if ops is not None:
        registry.register(_RegistryCollector(ops.registry))
    return registry


class ExporterServer:
    """Threaded HTTP server for the exporter endpoints; start() returns at once, stop() joins the thread."""

    def __init__(self, registry: CollectorRegistry, store: Store, host: str = "127.0.0.1", port: int = 9108,
                 readiness: Readiness | None = None, triggers_json: Callable[[], Any] | None = None,
                 stall_s: float = DEFAULT_STALL_S, scrape_timeout_s: float = 8.0,
                 write_failure: Callable[[], str | None] | None = None,
                 migrating: Callable[[], bool] | None = None, listening: EarlyListener | None = None) -> None:
        self.registry, self.store, self.readiness, self.triggers_json = registry, store, readiness, triggers_json
        self.stall_s = stall_s
        self.probe = DatabaseProbe(store, migrating=migrating)
        """`migrating`: the process is still migrating the schema (`run`, `serve` before their jobs start)."""
        self.exposed = CollectorRegistry(auto_describe=False)
        """What /metrics serves: the given registry plus driftline_database_up (exported by every replica)."""
        self.exposed.register(_RegistryCollector(registry))
        self.exposed.register(DatabaseUp(self.probe, store.calls, stall_s, write_failure))
        self.stall_watch = StallWatch(store.calls, stall_s)
        self.bounded = BoundedCall(scrape_timeout_s)
        """A scrape reading a database that stopped answering gives up (503) instead of hanging."""
        self.scrapes = FailureStreak("scrape", log)
        """Failed scrapes logged by streak: a table locked for 75 s logged a warning at every scrape (18 of 25
        lines; database-fault tryout), where the consumer said it three times."""
        self._thread: threading.Thread | None = None
        if listening is not None:  # bound and answering since the start of `run` (early.py): served from now on
            self.httpd, self._thread = listening.adopt(self._handler())  # by this handler, no gap
            return
        try:
            self.httpd = HTTPServer((host, port), self._handler())
        except OSError as err:  # the CLI prints it as one line: say which address
            raise OSError(err.errno, f"cannot serve /metrics on {host}:{port}: {err.strerror}") from err

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) actually bound (port 0 in the config picks a free port)."""
        host, port = self.httpd.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}"

    def ready(self) -> tuple[bool, str]:
        """Database answering (published state only, never a query here) and, when given, the readiness callback
        satisfied."""
        ok, why = database_state(self.probe, self.store.calls, self.stall_s)
        if not ok and why == MIGRATING and self.readiness is not None:  # what the migration waits for, if anything
            try:  # (SRE tryout: a first start behind a held write lock said only "being migrated" for minutes, the
                ok2, why2 = self.readiness()  # lock's holder named in the log alone)
            except Exception:  # noqa: BLE001 - the database's reason stands alone
                return ok, why
            return ok, why if ok2 or ": " not in why2 else f"{why}; {why2}"
        if not ok or self.readiness is None:
            return ok, why
        try:
            ok2, why2 = self.readiness()
        except Exception as err:  # noqa: BLE001 - a failing check means not ready
            return False, f"readiness check failed: {err}"
        return ok2, f"{why}; {why2}" if ok2 else why2  # not ready: only why ("database ok; database …" misled)

    def scrape(self, encoder: Callable[[CollectorRegistry], bytes]) -> bytes:
        """The encoded registry within the scrape time limit; ScrapeTimeout at once while a database call is
        known to be stalled (a scrape would only wait for it too), or when the collection takes too long."""
        _, why = database_state(self.probe, self.store.calls, self.stall_s, first_wait_s=0.0)
        if why.startswith("database not answering"):
            raise ScrapeTimeout(why)
        try:
            return self.bounded(lambda: encoder(self.exposed))
        except ScrapeTimeout as err:
            stalled = self.store.calls.stalled(0.0)
            raise ScrapeTimeout(f"{err}; {self.store.calls.describe(stalled)}" if stalled else str(err)) from None

    def start(self) -> None:
        if self._thread is None:  # an adopted socket is served already
            self._thread = threading.Thread(target=self.httpd.serve_forever, name="driftline-exporter", daemon=True)
            self._thread.start()
        self.probe.start()
        self.stall_watch.start()
        log.info("exporter listening on %s", self.url)

    def stop(self) -> None:
        self.probe.stop()
        self.stall_watch.stop()
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            head = False
            """Answering HEAD: the same status and headers as GET, no body (load balancers and uptime checks
            probe with HEAD; it answered 501)."""

            def do_HEAD(self) -> None:  # noqa: N802 - http.server API
                self.head = True
                self.do_GET()

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    encoder, ctype = choose_encoder(self.headers.get("Accept", ""))
                    try:
                        body = server.scrape(encoder)
                    except ScrapeTimeout as err:
                        if str(err).startswith("database not answering"):  # warned once by StallWatch
                            log.info("scrape failed: %s", err)
                        else:
                            server.scrapes.failed(err)
                        self._send(503, f"scrape failed: {err}\n".encode(), "text/plain; charset=utf-8")
                        return
                    except (DBAPIError, SchemaMissing) as err:  # the reads refused (SRE tryout: a 500 and a
                        first = str(err).splitlines()[0]  # traceback per scrape on a database recreated empty)
                        server.scrapes.failed(RuntimeError(f"database error: {first}"))
                        self._send(503, f"scrape failed: database error: {first}\n".encode(),
                                   "text/plain; charset=utf-8")
                        return
                    except Exception:  # noqa: BLE001 - report, never kill the server
                        log.exception("scrape failed")
                        self._send(500, b"scrape failed\n", "text/plain; charset=utf-8")
                        return
                    server.scrapes.succeeded()
                    self._send(200, body, ctype)
                elif path == "/healthz":
                    self._send(200, b"ok\n", "text/plain; charset=utf-8")
                elif path == "/readyz":
                    ok, why = server.ready()
                    self._send(200 if ok else 503, (why + "\n").encode(), "text/plain; charset=utf-8")
                elif path == "/triggers" and server.triggers_json is not None:
                    self._send(200, json.dumps(server.triggers_json()).encode(), "application/json")
                else:
                    self._send(404, b"not found: try /metrics, /healthz, /readyz\n", "text/plain; charset=utf-8")

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not self.head:
                    self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server API
                log.debug("%s " + format, self.address_string(), *args)

        return Handler
