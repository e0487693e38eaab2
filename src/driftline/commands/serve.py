"""`driftline serve`: Prometheus exporter and trigger evaluation over an existing database (no consuming)."""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING

from ..context import Context, port_number
from .render import shown

if TYPE_CHECKING:
    from ..service.process import Service


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve /metrics, /healthz, /readyz and evaluate triggers (no consuming)")
    p.add_argument("--host", help="bind address (default: config exporter.host, 127.0.0.1)")
    p.add_argument("--port", type=port_number, help="port (default: config exporter.port, 9108)")
    p.add_argument("--time", choices=("wall", "event"), default="wall",
                   help="windows end now (wall, default) or at the newest stored prediction (event: replayed data)")
    p.add_argument("--no-evaluate", action="store_true", help="export only; another replica evaluates triggers")
    p.set_defaults(func=cmd_serve)


def install_stop_handlers(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set `stop` (clean shutdown instead of KeyboardInterrupt mid-job)."""
    def handler(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def cmd_serve(ctx: Context, args: argparse.Namespace) -> int:
    # lazy: every command module is imported to build the parser, and only serve needs APScheduler
    from ..service.process import Service, run_until_signalled

    service = Service(ctx.config, ctx.store(), clock=ctx.clock, host=args.host, port=args.port,
                      time_basis=args.time, evaluate=not args.no_evaluate, jobs=True)
    stop = threading.Event()
    install_stop_handlers(stop)

    def announce(svc: Service) -> None:
        ctx.err.print(f"driftline serve: {svc.url}/metrics (model {shown(ctx.config.model)}, "
                      f"{len(svc.rules)} trigger(s), "
                      f"evaluate every {ctx.config.schedule.evaluate_every}, windows end at {args.time} time)")

    run_until_signalled(service, stop, on_start=announce)
    ctx.err.print("driftline serve: stopped")
    return 0
