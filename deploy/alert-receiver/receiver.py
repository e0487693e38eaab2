#!/usr/bin/env python3
"""A minimal webhook receiver for the compose stack: Alertmanager (and driftline's webhook notifier) POST alerts
here; each notification is printed as one JSON line on stdout (`docker compose logs -f alert-receiver`).

It stands in for Slack/PagerDuty/e-mail so the stack's alert path can be seen working end to end; replace the
receivers in deploy/alertmanager/alertmanager.yml to page people (README, Deployment). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 1 << 20


class Handler(BaseHTTPRequestHandler):
    """POST any path: log the JSON body with the path (the route: /alerts or /alerts/critical), answer 200."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.send_error(413, "body too large")
            return
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            self.send_error(400, "body is not JSON")
            return
        alerts = body.get("alerts", []) if isinstance(body, dict) else []
        line = {"path": self.path, "status": body.get("status") if isinstance(body, dict) else None,
                "alerts": [{"alertname": a.get("labels", {}).get("alertname"), "status": a.get("status"),
                            "severity": a.get("labels", {}).get("severity")} for a in alerts if isinstance(a, dict)],
                "body": body}
        sys.stdout.write(json.dumps(line, sort_keys=True) + "\n")
        sys.stdout.flush()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        """/healthz for the compose healthcheck."""
        self.send_response(200 if self.path == "/healthz" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (signature of the base class)
        """Access log off: stdout carries only the notifications."""


def main(argv: list[str] | None = None) -> int:
    """Serve until stopped."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=5001)
    args = p.parse_args(argv)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(json.dumps({"listening": f"{args.host}:{server.server_address[1]}"}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
