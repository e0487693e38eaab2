"""`driftline serve`: Prometheus exporter and trigger evaluation over an existing database (no consuming)."""

from __future__ import annotations

import argparse
import os
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING

from ..core.labels import by_name
from ..context import Context, port_number
from .prose import say
from .render import shown

if TYPE_CHECKING:
    from ..exporter.early import EarlyListener


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve /metrics, /healthz, /readyz and evaluate triggers (no consuming)")
    p.add_argument("--host", help="bind address (default: config exporter.host, 127.0.0.1)")
    p.add_argument("--port", type=port_number, help="port (default: config exporter.port, 9108)")
    p.add_argument("--time", choices=("wall", "event"), default="wall",
                   help="windows end now (wall, default) or at the newest stored prediction (event: replayed data)")
    p.add_argument("--no-evaluate", action="store_true", help="export only; another replica evaluates triggers")
    p.set_defaults(func=cmd_serve)


STOPPING = "stopping cleanly (Ctrl-C again to exit at once)\n"
INTERRUPTED_AGAIN = ("interrupted again: exiting now, without waiting for the clean shutdown (nothing stored is "
                     "lost: an unfinished batch or job is not stored and is done again at the next start)\n")


def _say(text: str) -> None:
    """Write to standard error's file descriptor, not through sys.stderr: the handler runs in the main thread
    between two bytecodes, possibly inside a sys.stderr write, whose buffered writer then raises `RuntimeError:
    reentrant call` into the interrupted code."""
    try:
        os.write(2, text.encode("utf-8", "replace"))
    except OSError:
        pass  # standard error closed: the stop itself goes on


def install_stop_handlers(stop: threading.Event, again: str = INTERRUPTED_AGAIN) -> None:
    """SIGTERM, SIGINT and SIGHUP set `stop` (clean shutdown instead of KeyboardInterrupt mid-job). SIGHUP's default
    action killed the process on the spot (a closed terminal or ssh session, a `kill -HUP` meant as a reload):
    no consumer leaving its group, no log line. A SIGHUP ignored at start (`nohup`) stays ignored. A second SIGINT
    (Ctrl-C again) exits at once with 130: the clean shutdown waits for a running job, e.g. a trigger evaluation
    waiting out another writer's lock (30 s), and a second Ctrl-C changed nothing (soak tryout); `again` is what it
    says (a producer stores nothing: simulate says what is left unconfirmed instead). The handler takes no lock: it
    writes a byte to a pipe and a thread sets `stop`. Calling `stop.set()` in the handler deadlocked when a second
    signal interrupted the first one's `set()` (holding the Event's lock) in the main thread: `timeout` sends
    SIGTERM to its child and to the child's process group, and the stop never ended."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signalled = [False]

    def set_stop() -> None:
        while os.read(read_end, 64):
            stop.set()

    threading.Thread(target=set_stop, name="driftline-stop-signal", daemon=True).start()

    def handler(signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGINT and (signalled[0] or stop.is_set()):
            _say(again)
            os._exit(130)  # the database holds only committed transactions: this is as safe as kill -9
        if signum == signal.SIGINT:
            _say(STOPPING)
        signalled[0] = True
        try:
            os.write(write_end, b"s")
        except BlockingIOError:
            pass  # the pipe is full of earlier signals' bytes: `stop` is being set already

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, handler)


def cmd_serve(ctx: Context, args: argparse.Namespace) -> int:
    """Bind the exporter first, then migrate the schema, waiting (with backoff, /readyz 503 saying why) while the
    database is unreachable, as `run` does: a replica started before its database comes up is not a crash loop."""
    from ..exporter.early import listen_early

    stop = threading.Event()
    install_stop_handlers(stop)
    # /healthz answers from here, as in `run`, not once the service is imported and built (~1.5 s later: a
    # Kubernetes probe met connection refused); the exporter takes the same socket over with no gap
    early = listen_early(ctx.config.exporter.host if args.host is None else args.host,
                         ctx.config.exporter.port if args.port is None else args.port)
    try:
        return _serve(ctx, args, stop, early)
    finally:
        if early is not None:
            early.close()  # a start refused before the exporter took the socket over


def _serve(ctx: Context, args: argparse.Namespace, stop: threading.Event, early: EarlyListener | None) -> int:
    """cmd_serve once the port answers: build the service, adopt the socket, migrate, serve until `stop`."""
    # lazy: every command module is imported to build the parser, and only serve needs APScheduler
    from ..service.live import migrate_with_retry
    from ..service.process import Service
    from ..storage.store import Store

    store = Store(ctx.db_url, clock=ctx.clock,  # not ctx.store(): it migrates at once and exits when the db is down
                  sqlite_cache_mb=ctx.config.storage.sqlite_cache_mb)
    waiting = {"why": "migrating the database schema"}

    def schema() -> tuple[bool, str]:
        return (True, "schema ready") if service.schema_ready.is_set() else (False, waiting["why"])

    service = Service(ctx.config, store, clock=ctx.clock, host=args.host, port=args.port, readiness=schema,
                      time_basis=args.time, evaluate=not args.no_evaluate, jobs=True, listening=early)
    try:
        service.start_exporter()  # /healthz and /readyz answer while the database is unreachable or migrating
        if (migrate_with_retry(store, stop, on_wait=lambda why: waiting.update(why=f"database unavailable: {why}"))
                and not stop.is_set()):
            service.start_jobs()
            models = _models(store)
            ctx.err.print(f"driftline serve: {service.url}/metrics ({_stored_models(models)}; "
                          f"{_triggers_of(len(service.rules), ctx.config.model, ctx.model_named)}, "
                          f"evaluate every {ctx.config.schedule.evaluate_every}, windows end at {args.time} time)")
            note = default_model_note(len(service.rules), ctx.config.model, ctx.model_named, models)
            if note:
                say(ctx.err, note, "[yellow]note:[/yellow] ")
            while not stop.wait(0.5):
                pass
    finally:
        service.stop()
        store.close()
    ctx.err.print("driftline serve: stopped")
    return 0


def _models(store: object) -> list[str] | None:
    """The stored models by name, None when the database cannot say (a start-up line must not stop serve)."""
    try:
        return sorted(store.models(), key=by_name)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - the exporter reports the database
        return None


def _triggers_of(n: int, model: str, named: bool) -> str:
    """'2 trigger(s) of model fraud'; the default model said to be one when the config sets no `model:` (tryout:
    the line named 'fraud' as if configured), and 'no triggers' without any (there is no model they judge)."""
    if not n:
        return "no triggers"
    return f"{n} trigger(s) of {'model' if named else 'the default model'} {shown(model)}" + (
        "" if named else " (the config sets no `model:`)")


def default_model_note(n: int, model: str, named: bool, models: list[str] | None) -> str | None:
    """A note when triggers judge the built-in default model while the database holds others but not it: their
    states would stay insufficient_data and nothing would say why."""
    if not n or named or not models or model in models:
        return None
    return (f"the config sets no `model:`: its {n} trigger(s) judge the default model '{shown(model)}', which has no "
            f"stored predictions (the exporter serves every stored model: {_named(models)}); until it has, "
            "they read insufficient_data: set `model:` in the config to the model they are for")


def _stored_models(models: list[str] | None) -> str:
    """'models stored: m, n' as exported (tryout: the start line named the config's default model 'fraud' while
    the only model stored, and exported, was 'm'); at most five named."""
    if models is None:
        return "models stored: unknown"
    if not models:
        return "no model stored yet"
    return f"model{'s' if len(models) > 1 else ''} stored: {_named(models)}"


def _named(models: list[str]) -> str:
    """'a, b, c, d, e and 2 more': at most five named."""
    return ", ".join(shown(m) for m in models[:5]) + (f" and {len(models) - 5} more" if len(models) > 5 else "")
