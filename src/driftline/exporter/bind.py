"""Whether the exporter could listen on an address now, asked before a command does its work (`demo --port`
taken was found only after the demo had reset its database and written its settings)."""

from __future__ import annotations


def bind_problem(host: str, port: int) -> str | None:
    """Why an HTTP server like the exporter's cannot listen on host:port now (the OS's reason), None when it can;
    the trial socket is closed at once (the port is bound again for real later, so a race stays possible and is
    reported there)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    try:
        trial = ThreadingHTTPServer((host, port), BaseHTTPRequestHandler)
    except OSError as err:
        return err.strerror or str(err)
    trial.server_close()
    return None
