"""`driftline run` (live Kafka service) and `driftline topics create|check`."""

from __future__ import annotations

import argparse
import threading
from typing import TYPE_CHECKING

from ..context import Context, number_type, port_number, positive, whole
from ..kafka.dns_names import ResolutionLog
from ..kafka.settings import BOOTSTRAP_ENV, KafkaSettings, install_log_redaction, resolve
from ..kafka.topics import TopicsError
from ..numbers import counted
from .prose import say
from .render import shown

if TYPE_CHECKING:
    from ..kafka.producer import ProduceReport

MAX_REPLICAS = 2**15 - 1
"""Largest --replication-factor: Kafka's protocol carries it as a 16-bit integer."""


def _kafka_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kafka", metavar="BOOTSTRAP",
                   help=f"bootstrap servers host:port[,host:port] (env {BOOTSTRAP_ENV}; default: config kafka.bootstrap)")


MAINTAIN_EVERY = number_type(float, lambda v: 0 < v <= 86400, "must be more than 0 and at most 86400 seconds (a "
                             "day), got {text}")
"""argparse type of --maintain-every (a bare float took -5, maintenance on every poll, and nan, which never came
due: implicit negatives never matured and predictions never expired)."""


def register(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("run", help="consume predictions and outcomes from Kafka; serve /metrics and evaluate triggers")
    _kafka_arg(r)
    r.add_argument("--host", help="exporter bind address (default: config exporter.host, 127.0.0.1)")
    r.add_argument("--port", type=port_number, help="exporter port (default: config exporter.port, 9108)")
    r.add_argument("--no-evaluate", action="store_true", help="do not evaluate triggers (another replica does)")
    r.add_argument("--maintain-every", type=MAINTAIN_EVERY, default=30.0, metavar="SECONDS",
                   help="seconds between implicit-negative/expiry passes over this process's partitions (default 30)")
    r.set_defaults(func=cmd_run)

    t = sub.add_parser("topics", help="create or check the predictions/outcomes topics (co-partitioned)")
    tsub = t.add_subparsers(dest="topics_command", required=True, metavar="ACTION")
    c = tsub.add_parser("create", help="create missing topics with matching partition counts")
    _kafka_arg(c)
    c.add_argument("--partitions", type=positive(int), help="partitions per topic (default: existing count, else 6)")
    c.add_argument("--replication-factor", type=whole(1, MAX_REPLICAS), default=1,
                   help="copies of each partition (default 1; use 3 on a production cluster)")
    c.set_defaults(func=cmd_topics_create)
    k = tsub.add_parser("check", help="fail unless both topics exist with the same partition count")
    _kafka_arg(k)
    k.set_defaults(func=cmd_topics_check)


def _settings(ctx: Context, args: argparse.Namespace) -> KafkaSettings:
    settings = resolve(ctx.config.kafka, args.kafka, resolutions=ResolutionLog())  # this process's one (dns_names)
    install_log_redaction(settings)
    return settings


def cmd_run(ctx: Context, args: argparse.Namespace) -> int:
    from ..exporter.early import listen_early
    from .serve import install_stop_handlers

    settings = _settings(ctx, args)
    stop = threading.Event()
    install_stop_handlers(stop)
    # /healthz answers from here, not once the service is imported and built (~1.4 s more, 2-3 s in all: a
    # Kubernetes probe met connection refused); the config and the Kafka settings were accepted above
    early = listen_early(ctx.config.exporter.host if args.host is None else args.host,
                         ctx.config.exporter.port if args.port is None else args.port)
    try:
        from ..service.live import run_service

        run_service(ctx.config, ctx.db_url, settings, stop, host=args.host, port=args.port,
                    evaluate=not args.no_evaluate, maintain_every_s=args.maintain_every, clock=ctx.clock,
                    announce=lambda line: say(ctx.err, shown(line)), keep_model=ctx.model_named, listening=early)
    except TopicsError as err:
        ctx.err.print(f"[red]error:[/red] {shown(err)}", soft_wrap=True)
        return 2
    finally:
        if early is not None:
            early.close()  # a start refused before the exporter took the socket over
    ctx.err.print("driftline run: stopped")
    return 0


def _kafka_failed(ctx: Context, settings: KafkaSettings, err: BaseException) -> int:
    """Print why Kafka could not be used (a name that does not resolve: which one, from where, what to fix); exit 1.
    A broker advertising a name this host cannot resolve ended in 'unexpected KafkaConnectionError: DNS Resolution
    failure', naming no host and no setting."""
    state, reason = settings.resolutions.failure(err, settings.bootstrap)
    ctx.err.print(f"[red]error:[/red] Kafka at {settings.bootstrap} {state}: {shown(reason)}", soft_wrap=True)
    return 1


def _admin(ctx: Context, settings: KafkaSettings):  # type: ignore[no-untyped-def]
    from kafka.errors import KafkaError

    from ..kafka.topics import open_admin

    try:
        return open_admin(settings)
    except (KafkaError, OSError) as err:
        _kafka_failed(ctx, settings, err)
        return None


def cmd_topics_create(ctx: Context, args: argparse.Namespace) -> int:
    from kafka.errors import KafkaError

    from ..kafka.topics import create

    settings = _settings(ctx, args)
    admin = _admin(ctx, settings)
    if admin is None:
        return 1
    try:
        n, created = create(admin, settings, args.partitions, args.replication_factor)
    except TopicsError as err:
        ctx.err.print(f"[red]error:[/red] {shown(err)}", soft_wrap=True)
        return 2
    except (KafkaError, OSError) as err:  # the bootstrap server answered; a broker it names did not
        return _kafka_failed(ctx, settings, err)
    finally:
        admin.close()
    made = f"created {', '.join(created)}" if created else "nothing to create"
    ctx.console.print(f"topics {settings.predictions_topic} and {settings.outcomes_topic}: {n} partitions each "
                      f"({made})")
    return 0


def cmd_topics_check(ctx: Context, args: argparse.Namespace) -> int:
    from kafka.errors import KafkaError

    from ..kafka.topics import check

    settings = _settings(ctx, args)
    admin = _admin(ctx, settings)
    if admin is None:
        return 1
    try:
        n = check(admin, settings)
    except TopicsError as err:
        ctx.err.print(f"[red]error:[/red] {shown(err)}", soft_wrap=True)
        return 2
    except (KafkaError, OSError) as err:  # the bootstrap server answered; a broker it names did not
        return _kafka_failed(ctx, settings, err)
    finally:
        admin.close()
    ctx.console.print(f"topics {settings.predictions_topic} and {settings.outcomes_topic}: co-partitioned, "
                      f"{n} partitions each")
    return 0


def simulate_to_kafka(ctx: Context, args: argparse.Namespace, spec: object, end: float) -> int:
    """`driftline simulate --kafka B [--rate N]`: produce the simulated stream to both (co-partitioned) topics."""
    from kafka.errors import KafkaError

    from ..kafka.producer import MAX_PENDING, STOP_WAIT_S, close_producer, open_producer, produce_events
    from ..kafka.topics import check
    from ..ingest.simulate import stream
    from .serve import install_stop_handlers

    if args.rate is not None and args.rate <= 0:
        ctx.err.print("[red]error:[/red] --rate must be positive", soft_wrap=True)
        return 2
    settings = _settings(ctx, args)
    admin = _admin(ctx, settings)
    if admin is None:
        return 1
    try:
        n = check(admin, settings)  # before producing: a broker may auto-create a missing topic with any count
    except TopicsError as err:
        ctx.err.print(f"[red]error:[/red] {shown(err)}", soft_wrap=True)
        return 2
    except (KafkaError, OSError) as err:  # the bootstrap server answered; a broker it names did not
        return _kafka_failed(ctx, settings, err)
    finally:
        admin.close()
    try:
        producer = open_producer(settings, "-simulator")
    except (KafkaError, OSError) as err:
        return _kafka_failed(ctx, settings, err)
    stop = threading.Event()
    install_stop_handlers(stop, SIMULATE_INTERRUPTED_AGAIN)
    pace = f" at {args.rate:g} events/s" if args.rate else ""
    ctx.err.print(f"producing to {settings.predictions_topic}/{settings.outcomes_topic} ({n} partitions){pace}")

    def stopping(pending: int) -> None:
        if pending:
            why = "interrupted" if stop.is_set() else "a delivery failed"
            ctx.err.print(f"{why}: stopped producing; waiting up to {STOP_WAIT_S:g}s for the broker to "
                          f"acknowledge {counted(pending, 'event')} already sent", soft_wrap=True)

    def full(pending: int) -> None:
        ctx.err.print(f"waiting for the broker: {counted(pending, 'event')} sent and not yet acknowledged, held in "
                      f"memory (sending waits at {MAX_PENDING:,} and resumes below {MAX_PENDING // 2:,})",
                      soft_wrap=True)

    try:
        report = produce_events(producer, settings, stream(spec, end=end), args.rate, stop,  # type: ignore[arg-type]
                                on_stop=stopping, on_full=full)
    finally:
        close_producer(producer, 0.0)  # produce_events waited for the acknowledgements already
    return _produced(ctx, report)


SIMULATE_INTERRUPTED_AGAIN = ("interrupted again: exiting now, without waiting for the broker's acknowledgements "
                              "(no count of the events delivered; those sent and not yet acknowledged may be lost)\n")


def _produced(ctx: Context, report: ProduceReport) -> int:
    """Print what the broker acknowledged and what it did not; 1 when any event was not delivered."""
    from ..kafka.producer import STOP_WAIT_S

    per_topic = ", ".join(f"{t}: {c:,}" for t, c in report.delivered.items())
    cut = (" (interrupted)" if report.interrupted else
           " (stopped at a delivery failure: later events would have waited out the same delivery timeout)"
           if report.gave_up else "")
    if not report.undelivered:
        ctx.err.print(f"produced {report.total:,} events ({per_topic}) in {report.seconds:.1f}s{cut}, all "
                      "acknowledged by the broker", soft_wrap=True)
        return 0
    ctx.err.print(f"produced {report.total:,} of {report.attempted:,} events ({per_topic}) in "
                  f"{report.seconds:.1f}s{cut}: only those the broker acknowledged", soft_wrap=True)
    parts = [f"{report.failed:,} failed"] if report.failed else []
    if report.unconfirmed:
        after = "the interrupt" if report.interrupted else "the first delivery failure"
        parts.append(f"{report.unconfirmed:,} unacknowledged when the wait ended ({STOP_WAIT_S:g}s after {after})")
    ctx.err.print(f"[red]error:[/red] {counted(report.undelivered, 'event')} not delivered: {', '.join(parts)}",
                  soft_wrap=True)
    return 1
