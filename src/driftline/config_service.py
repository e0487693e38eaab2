"""Config sections of the long-running service (`run`, `serve`): exporter, Kafka, scheduled jobs, notifications."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec

from .config_checks import (DEFAULT_RUNBOOK_BASE_URL, SCRAPE_TIMEOUT_S, Base, Duration, _absolute_url,
                            _duration_between, _positive_durations)
from .durations import parse_duration
from .kafka_options import bootstrap_problem, option_problem, stall_problem


class Exporter(Base):
    """Where the Prometheus exporter listens (loopback unless explicitly changed)."""

    host: str = "127.0.0.1"
    port: Annotated[int, msgspec.Meta(ge=0, le=65535)] = 9108
    scrape_timeout: Duration = "8s"
    """A /metrics scrape that cannot read the database within this long answers 503 (keep it below Prometheus's
    scrape_timeout, 10s by default, so Prometheus sees the reason rather than its own timeout); 1s..60s."""

    def __post_init__(self) -> None:
        if not self.host.strip():  # the socket layer reads '' as every interface: /metrics open to the network
            raise ValueError(f"host: {self.host!r} is empty, which would listen on every interface: write 0.0.0.0 "
                             "to mean that, or leave `host` out for 127.0.0.1 (this machine only)")
        problem = host_problem(self.host)
        if problem:
            raise ValueError(f"host: {problem}")
        _duration_between("scrape_timeout", self.scrape_timeout, *SCRAPE_TIMEOUT_S,
                          "a scrape bound; keep it below the Prometheus job's scrape_timeout, 10s by default")


_HOST_PORT = re.compile(r"^(?:\[(?P<v6>[^\]]*)\]|(?P<name>[^:\[\]]*)):(?P<port>\d+)$")


def host_problem(host: str) -> str | None:
    """Why an `exporter.host` is an address with a scheme or a port rather than a bind address, else None:
    `localhost:9108` passed `config check` and `serve` then failed to start ("cannot serve /metrics on
    localhost:9108:9108") (toxicity tryout). A bare IPv6 address (`::1`) is a host."""
    if "://" in host:
        return (f"{host!r} is a URL: write the bind address alone (e.g. 127.0.0.1 or 0.0.0.0) and the port under "
                "`exporter.port`")
    m = _HOST_PORT.match(host)
    if m is None:
        return None
    bare = m.group("v6") if m.group("v6") is not None else m.group("name")
    return (f"{host!r} carries a port: write the host alone ({bare or '0.0.0.0'!r}) and the port under "
            f"`exporter.port` ({m.group('port')})")


BATCH_BYTES = 16 << 20
"""Default payload bytes of one stored batch (`kafka.batch_max_bytes`; `replay` cuts its batches at the same
bound): a batch ends at the record that brings it there, so memory follows this bound, not the events' sizes."""


class Kafka(Base):
    """Kafka connection and topics; extra kafka-python settings (SASL/SSL) go under `options`."""

    bootstrap: str | None = None
    predictions_topic: str = "predictions"
    outcomes_topic: str = "outcomes"
    dead_letter_topic: str | None = None
    group_id: str = "driftline"
    client_id: str = "driftline"
    batch_max_records: Annotated[int, msgspec.Meta(ge=1)] = 20000
    batch_linger_ms: Annotated[int, msgspec.Meta(ge=0, le=60000)] = 250
    batch_max_bytes: Annotated[int, msgspec.Meta(ge=1 << 20, le=1 << 30)] = BATCH_BYTES
    """A batch also ends at the record that brings its payload bytes to this (1 MiB..1 GiB; always at least one
    record): a batch of large events stays within memory however many records `batch_max_records` allows."""
    on_offset_reset: Literal["fail", "earliest", "latest"] = "earliest"
    """A stored position beyond the log end (topic or broker reset) or before its start (retention deleted
    unread data): stop that partition until resolved, or resume at the log's start or end (always logged)."""
    on_key_mismatch: Literal["dead_letter", "accept"] = "dead_letter"
    """A record whose key is not its prediction_id (or null): dead-letter it, or accept it (counted, warned)."""
    dead_letter_max_bytes: Annotated[int, msgspec.Meta(ge=4096, le=100_000_000)] = 524288
    """Bound on the payload copied to the dead-letter topic (longer ones are cut, with an `original_size` header)."""
    unassigned_grace: Duration = "30s"
    """/readyz turns 503 when this process has owned no partition for longer than this."""
    stall_restart: Duration = "90s"
    """When this member's group membership stays broken this long (coordinator unknown, a rebalance that never
    completes), its Kafka client is closed and a new one connects; must exceed the rebalance timeout."""
    database_stall: Duration = "30s"
    """A database call (a connection, a statement, the commit) unanswered this long, beyond the write-lock wait, is
    reported: /readyz 503 naming it and one warning (a silent partition or a stopped proxy)."""
    align_within: Duration | None = None
    """Event-time alignment while catching up a backlog: a partition whose events are more than this ahead of the
    slowest partition with records left is paused until the others catch up (kafka/alignment.py), so the newest
    event stored never runs more than this ahead of an unread one; shorter than labels.horizon (default: a quarter
    of it). Events out of order within one partition by more than the horizon minus this are still past_horizon."""
    options: dict[str, Any] = {}

    def __post_init__(self) -> None:
        _positive_durations("", unassigned_grace=self.unassigned_grace, stall_restart=self.stall_restart,
                            database_stall=self.database_stall, align_within=self.align_within)
        problem = bootstrap_problem(self.bootstrap) if self.bootstrap else None
        if problem:  # kafka-python retried a port 99999 for ever, or failed with an unexpected ValueError
            raise ValueError(f"bootstrap: {problem}")
        for name in ("predictions_topic", "outcomes_topic", "dead_letter_topic", "group_id", "client_id"):
            value = getattr(self, name)
            if value is not None and not value.strip():  # group "" was joined as is (tryout)
                raise ValueError(f"{name}: must not be empty")
        for name in ("predictions_topic", "outcomes_topic", "dead_letter_topic"):
            value = getattr(self, name)
            if value is not None and not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", value):
                raise ValueError(f"{name}: {value!r} is not a Kafka topic name (1 to 249 of A-Z a-z 0-9 . _ -)")
        if self.predictions_topic == self.outcomes_topic:  # was found by `run` only: every other command loaded it
            raise ValueError(f"outcomes_topic: {self.outcomes_topic!r} is the predictions_topic too; the two topics "
                             "must differ")
        if self.dead_letter_topic in (self.predictions_topic, self.outcomes_topic):
            raise ValueError(f"dead_letter_topic: {self.dead_letter_topic!r} is a consumed topic: each copy would "
                             "be read again and dead-lettered again, without end")
        # checked here, as `run` checks them with DRIFTLINE_KAFKA_OPT_* added (tryout: a config `run` refused for
        # `requst_timeout_ms` loaded for every other command), from a static table: no kafka-python import
        problem = option_problem(self.options, lambda name: f"options.{name}")
        if problem:
            raise ValueError(problem)
        problem = stall_problem(self.stall_restart, parse_duration(self.stall_restart), self.options)
        if problem:
            raise ValueError(f"stall_restart: {problem}")


class Schedule(Base):
    """Scheduled jobs (UTC)."""

    evaluate_every: Duration = "1m"
    weekly_report_cron: str = "0 6 * * mon"
    report_dir: str = "reports"

    def __post_init__(self) -> None:
        _positive_durations("", evaluate_every=self.evaluate_every)
        if self.weekly_report_cron != "0 6 * * mon":  # checked at load, as every field (was at job start only)
            from datetime import timezone

            from apscheduler.triggers.cron import CronTrigger  # lazy: only a config that sets it pays the import

            try:
                CronTrigger.from_crontab(self.weekly_report_cron, timezone=timezone.utc)
            except ValueError as err:
                raise ValueError(f"weekly_report_cron: {err}") from None


NOTIFIER_LABELS = ("alertname", "model", "trigger", "severity")
"""Labels of every notifier alert, set by driftline (notify.labels may add others, never these)."""


class Notify(Base):
    """Where trigger notifications go: Alertmanager v2 API and/or a JSON webhook (neither: log and store only)."""

    alertmanager_url: str | None = None
    webhook_url: str | None = None
    timeout: Duration = "5s"
    retries: Annotated[int, msgspec.Meta(ge=0, le=20)] = 3
    backoff: Duration = "1s"
    generator_url: str | None = None
    runbook_base_url: str = DEFAULT_RUNBOOK_BASE_URL
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    """Static labels added to every alert the notifier sends (e.g. cluster, job): two deployments of one model
    notifying one Alertmanager are otherwise the same alert, and one's resolve ends the other's page."""

    def __post_init__(self) -> None:
        _positive_durations("", timeout=self.timeout, backoff=self.backoff)
        for name, value in self.labels.items():
            if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", name) or name.startswith("__"):
                raise ValueError(f"labels: {name!r} is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not "
                                 "starting with __)")
            if name in NOTIFIER_LABELS:
                raise ValueError(f"labels: {name!r} is set by driftline itself ({', '.join(NOTIFIER_LABELS)})")
            if not value.strip():
                raise ValueError(f"labels: {name!r} has an empty value (Alertmanager drops empty labels)")
        _absolute_url("runbook_base_url", self.runbook_base_url, anchor=False)
        _absolute_url("generator_url", self.generator_url)
        for name in ("alertmanager_url", "webhook_url"):  # a receiver without a scheme failed every send, silently
            url = getattr(self, name)
            if url is not None and not re.fullmatch(r"https?://[^/\s#?]+[^\s#]*", url, re.IGNORECASE):
                example = "http://alertmanager:9093" if name == "alertmanager_url" else "https://hooks.example.com/x"
                raise ValueError(f"{name}: must be an absolute http(s) URL of the receiver (e.g. {example}), "
                                 f"got {url!r}")
