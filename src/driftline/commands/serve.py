"""`driftline serve`: Prometheus exporter and trigger evaluation over an existing database (no consuming)."""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType

from ..core.labels import by_name
from ..context import Context, port_number
from .render import shown


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
    """Bind the exporter first, then migrate the schema, waiting (with backoff, /readyz 503 saying why) while the
    database is unreachable, as `run` does: a replica started before its database comes up is not a crash loop."""
    # lazy: every command module is imported to build the parser, and only serve needs APScheduler
    from ..service.live import migrate_with_retry
    from ..service.process import Service
    from ..storage.store import Store

    store = Store(ctx.db_url, clock=ctx.clock)  # not ctx.store(): it migrates at once and exits when the db is down
    waiting = {"why": "migrating the database schema"}

    def schema() -> tuple[bool, str]:
        return (True, "schema ready") if service.schema_ready.is_set() else (False, waiting["why"])

    service = Service(ctx.config, store, clock=ctx.clock, host=args.host, port=args.port, readiness=schema,
                      time_basis=args.time, evaluate=not args.no_evaluate, jobs=True)
    stop = threading.Event()
    install_stop_handlers(stop)
    try:
        service.start_exporter()  # /healthz and /readyz answer while the database is unreachable or migrating
        if (migrate_with_retry(store, stop, on_wait=lambda why: waiting.update(why=f"database unavailable: {why}"))
                and not stop.is_set()):
            service.start_jobs()
            ctx.err.print(f"driftline serve: {service.url}/metrics ({_stored_models(store)}; "
                          f"{len(service.rules)} trigger(s) of model {shown(ctx.config.model)}, "
                          f"evaluate every {ctx.config.schedule.evaluate_every}, windows end at {args.time} time)")
            while not stop.wait(0.5):
                pass
    finally:
        service.stop()
        store.close()
    ctx.err.print("driftline serve: stopped")
    return 0


def _stored_models(store: object) -> str:
    """'models stored: m, n' as exported (tryout: the start line named the config's default model 'fraud' while
    the only model stored, and exported, was 'm'); at most five named."""
    try:
        models = sorted(store.models(), key=by_name)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a start-up line must not stop serve; the exporter reports the database
        return "models stored: unknown"
    if not models:
        return "no model stored yet"
    named = ", ".join(shown(m) for m in models[:5]) + (f" and {len(models) - 5} more" if len(models) > 5 else "")
    return f"model{'s' if len(models) > 1 else ''} stored: {named}"
