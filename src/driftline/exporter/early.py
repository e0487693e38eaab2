"""The exporter's socket, bound by `run` before it imports its service: /healthz answers at once, not ~2 s later.

On-call tryout: a Kubernetes liveness/startup probe of `driftline run` met connection refused for 2-3 s after the
start, the time the process spent importing the exporter's readouts (scipy, matplotlib) and building its service
before it bound the port. Here only the standard library is used: the port is bound once the config and the
--kafka settings were accepted (a refused start stays refused first, with its message), /healthz answers 200 and
/readyz and /metrics 503 `starting: …`; the exporter then takes the same socket over (`adopt`), with no gap in
which a probe is refused.
"""

from __future__ import annotations

import logging
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger("driftline.exporter.http")

STARTING = "starting: driftline is loading; the database and Kafka are not checked yet"
"""/readyz's reason (503) until the exporter takes the socket over."""

_HUNG_UP = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)
"""A scrape client that went away (Prometheus timed out, curl interrupted): routine, not an error."""


class HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer whose request errors go to the log: a client hanging up is a debug line, anything else
    one logged exception (the socketserver default prints a traceback to stderr for both)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        err = sys.exc_info()[1]
        who = client_address[0] if isinstance(client_address, tuple) else client_address
        if isinstance(err, _HUNG_UP):
            log.debug("scrape client %s hung up early: %s", who, err)
        else:
            log.exception("exporter request from %s failed", who)


class _Starting(BaseHTTPRequestHandler):
    """Answers while the service is built: alive (/healthz 200), not ready, no metrics yet."""

    def do_HEAD(self) -> None:  # noqa: N802 - http.server API
        self._answer(head=True)

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        self._answer(head=False)

    def _answer(self, head: bool) -> None:
        path = self.path.split("?", 1)[0]
        code, body = ((200, "ok") if path == "/healthz" else (503, STARTING) if path in ("/readyz", "/metrics")
                      else (404, "not found: try /metrics, /healthz, /readyz"))
        data = (body + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server API
        log.debug("%s " + format, self.address_string(), *args)


class EarlyListener:
    """The bound socket and the thread serving it, until the exporter adopts both (or `close`)."""

    def __init__(self, httpd: HTTPServer) -> None:
        self.httpd = httpd
        self.thread = threading.Thread(target=httpd.serve_forever, name="driftline-exporter", daemon=True)
        self.adopted = False
        self.thread.start()

    def adopt(self, handler: type[BaseHTTPRequestHandler]) -> tuple[HTTPServer, threading.Thread]:
        """Serve every later request with `handler` (the exporter's); (the server, its thread), now the caller's."""
        self.httpd.RequestHandlerClass = handler
        self.adopted = True
        return self.httpd, self.thread

    def close(self) -> None:
        """Stop serving and release the port, unless the exporter adopted them (it stops them itself)."""
        if self.adopted:
            return
        self.adopted = True
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


def listen_early(host: str, port: int) -> EarlyListener | None:
    """Bind host:port and answer at once; None when it cannot be bound now: the exporter binds it later as before,
    and its refusal (`cannot serve /metrics on …`) comes where it always came."""
    try:
        httpd = HTTPServer((host, port), _Starting)
    except OSError:
        return None
    return EarlyListener(httpd)
