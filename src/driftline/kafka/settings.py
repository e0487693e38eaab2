"""kafka-python client settings from the config's `kafka` section, the --kafka flag and the environment.

Bootstrap servers: --kafka, then DRIFTLINE_KAFKA_BOOTSTRAP, then `kafka.bootstrap`. Extra kafka-python settings
(SASL/SSL, timeouts) come from `kafka.options` and from DRIFTLINE_KAFKA_OPT_<NAME> environment variables (so a
password need not sit in the YAML file); each client gets only the options it accepts. Secrets never reach a
log line: `redacted()` masks them and `install_log_redaction` scrubs their values from every log record.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..config import ConfigError, Kafka
from ..config_service import BATCH_BYTES
from ..durations import parse_duration
from ..kafka_options import (ADMIN, CONSUMER, MASK, PRODUCER, REBALANCE_MS, SECRET_KEY, SESSION_MS,
                             bootstrap_problem, option_problem, stall_problem)
from ..storage.locking import DEFAULT_LOCK_TIMEOUT_S
from . import dns_names, tls_handshake

BOOTSTRAP_ENV = "DRIFTLINE_KAFKA_BOOTSTRAP"
OPTION_ENV_PREFIX = "DRIFTLINE_KAFKA_OPT_"
KAFKA_LOG_LEVEL_ENV = "DRIFTLINE_KAFKA_LOG_LEVEL"
CONSUMER_DEFAULTS: dict[str, Any] = {
    "auto_offset_reset": "none",
    "reconnect_backoff_max_ms": 1000,
    "bootstrap_timeout_ms": 5000,
    "session_timeout_ms": SESSION_MS,
    "heartbeat_interval_ms": 3_000,
    "max_poll_interval_ms": REBALANCE_MS,
    "allow_auto_create_topics": False,
    "isolation_level": "read_committed",
    "fetch_max_bytes": 16 << 20,
    "max_partition_fetch_bytes": 1 << 20,
}
"""Defaults suited to a DB-positioned consumer (overridable through options). read_committed: records of aborted
producer transactions are never counted (no change for producers without transactions). max_poll_interval_ms is
also the rebalance timeout: after a member dies, the others own nothing until it passes (benchmarks/recovery_bench.py:
68 s of no ownership at 60 s, 13.5 s at 30 s on tansu); one batch takes seconds, the loop polls while paused.
fetch_max_bytes (kafka-python: 50 MiB) bounds what the client buffers from one fetch, next to the batch and the
records carried to the next one (each up to kafka.batch_max_bytes); a larger record still comes whole."""

PRODUCER_DEFAULTS: dict[str, Any] = {
    "reconnect_backoff_max_ms": 1000,
    "bootstrap_timeout_ms": 5000,
    "linger_ms": 5,
    "allow_auto_create_topics": False,
}
ADMIN_DEFAULTS: dict[str, Any] = {"reconnect_backoff_max_ms": 1000, "bootstrap_timeout_ms": 5000}


def _accepted(kind: str) -> frozenset[str]:
    """Config keys a kafka-python client class accepts (it rejects any other key; kafka_options' table)."""
    return CONSUMER if kind == "consumer" else PRODUCER if kind == "producer" else ADMIN


@dataclass(frozen=True)
class KafkaSettings:
    """Everything needed to build the Kafka clients of one driftline process."""

    bootstrap: str
    client_id: str = "driftline"
    group_id: str = "driftline"
    predictions_topic: str = "predictions"
    outcomes_topic: str = "outcomes"
    dead_letter_topic: str | None = None
    batch_max_records: int = 20000
    batch_linger_ms: int = 250
    """How long a batch may keep filling after its first records (few large transactions on a busy stream)."""
    batch_max_bytes: int = BATCH_BYTES
    """A batch ends at the record that brings its payload bytes to this (see batches.cut)."""
    on_offset_reset: str = "earliest"
    """fail | earliest | latest: what to do with a stored position outside the log (see resets.py)."""
    on_key_mismatch: str = "dead_letter"
    dead_letter_max_bytes: int = 524288
    unassigned_grace_s: float = 30.0
    stall_restart_s: float = 90.0
    """Group membership broken this long → the Kafka client is rebuilt (see health.StallWatch)."""
    database_stall_s: float = 30.0
    """A database call unanswered this long is reported (/readyz 503, a warning; see storage.calls)."""
    options: dict[str, Any] = field(default_factory=dict)
    resolutions: dns_names.ResolutionLog = field(default_factory=dns_names.ResolutionLog, compare=False, repr=False)
    """Broker names this process's clients could not resolve (dns_names.py): the CLI hands each process one."""

    @property
    def topics(self) -> tuple[str, str]:
        """(predictions topic, outcomes topic)."""
        return (self.predictions_topic, self.outcomes_topic)

    @property
    def lock_wait_s(self) -> float:
        """How long one write transaction of `run` waits for the database write lock: a third of
        max_poll_interval_ms (the loop must poll within it or the group evicts the member), at most the 30 s lock
        timeout. A batch that waited out its slice is held and tried again while the loop polls, refreshes lag
        and notices a stop; the lock is reported once waited for 30 s in all (db_health.LOCK_PATIENCE_S)."""
        rebalance_ms = int(self.options.get("max_poll_interval_ms", CONSUMER_DEFAULTS["max_poll_interval_ms"]))
        return min(DEFAULT_LOCK_TIMEOUT_S, rebalance_ms / 3000)

    def kind_of(self, topic: str) -> str:
        """Event type a topic carries ('prediction' or 'outcome')."""
        return "prediction" if topic == self.predictions_topic else "outcome"

    def _kwargs(self, kind: str, defaults: Mapping[str, Any], client_suffix: str) -> dict[str, Any]:
        """Settings of one kind of client; every client driftline builds takes them from here, so kafka-python's
        TLS handshake gets its deadline first (tls_handshake.py: a peer that never answers hung the client) and its
        DNS lookups are recorded (dns_names.py: a failure named no host)."""
        tls_handshake.install()
        dns_names.install(self.resolutions)
        accepted = _accepted(kind)
        out: dict[str, Any] = {k: v for k, v in defaults.items() if k in accepted}
        out.update({k: v for k, v in self.options.items() if k in accepted})
        out["bootstrap_servers"] = [s.strip() for s in self.bootstrap.split(",") if s.strip()]
        out["client_id"] = self.client_id + client_suffix
        return out

    def consumer_kwargs(self, assignor: Any = None) -> dict[str, Any]:
        """KafkaConsumer settings: manual commits, Range assignment only, our group. `assignor`: the live
        consumer's Range assignor carrying its database id (group_db.py); plain RangePartitionAssignor without."""
        from kafka.coordinator.assignors.range import RangePartitionAssignor

        out = self._kwargs("consumer", CONSUMER_DEFAULTS, "")
        out.update(group_id=self.group_id, enable_auto_commit=False, auto_offset_reset="none",
                   partition_assignment_strategy=[assignor if assignor is not None else RangePartitionAssignor])
        return out

    def producer_kwargs(self, suffix: str = "-producer") -> dict[str, Any]:
        """KafkaProducer settings (simulator, dead-letter topic)."""
        return self._kwargs("producer", PRODUCER_DEFAULTS, suffix)

    def admin_kwargs(self) -> dict[str, Any]:
        """KafkaAdminClient settings (topic checks and creation)."""
        return self._kwargs("admin", ADMIN_DEFAULTS, "-admin")

    def secrets(self) -> list[str]:
        """String values of secret options, to scrub from log lines."""
        return [str(v) for k, v in self.options.items() if SECRET_KEY.search(k) and v not in (None, "")]

    def describe(self) -> str:
        """One log line about the connection with every secret masked."""
        opts = ", ".join(f"{k}={v}" for k, v in sorted(redacted(self.options).items()))
        return (f"bootstrap={self.bootstrap} client_id={self.client_id} group={self.group_id} "
                f"topics={self.predictions_topic},{self.outcomes_topic}"
                + (f" dead_letter_topic={self.dead_letter_topic}" if self.dead_letter_topic else "")
                + (f" options: {opts}" if opts else ""))


def redacted(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `options` with the values of secret-looking keys replaced by ***."""
    return {k: (MASK if SECRET_KEY.search(k) and v is not None else v) for k, v in options.items()}


def env_options(env: Mapping[str, str]) -> dict[str, Any]:
    """DRIFTLINE_KAFKA_OPT_SASL_PLAIN_PASSWORD=x → {'sasl_plain_password': 'x'} (numbers and booleans parsed)."""
    out: dict[str, Any] = {}
    for key, raw in env.items():
        if key.startswith(OPTION_ENV_PREFIX) and len(key) > len(OPTION_ENV_PREFIX):
            name = key[len(OPTION_ENV_PREFIX):].lower()
            value: Any = raw
            if not SECRET_KEY.search(name):
                try:
                    parsed = yaml.safe_load(raw)
                except yaml.YAMLError:
                    parsed = raw
                if isinstance(parsed, (int, float, bool)):
                    value = parsed
            out[name] = value
    return out


def resolve(section: Kafka, flag: str | None = None, env: Mapping[str, str] | None = None,
            resolutions: dns_names.ResolutionLog | None = None) -> KafkaSettings:
    """Settings from the --kafka flag, the environment and the config, recording unresolvable broker names in
    `resolutions` (a fresh log when None); ConfigError names what is wrong."""
    env = os.environ if env is None else env
    bootstrap = flag or env.get(BOOTSTRAP_ENV) or section.bootstrap
    if not bootstrap or not bootstrap.strip():
        raise ConfigError(f"no Kafka bootstrap servers: pass --kafka HOST:PORT, set {BOOTSTRAP_ENV}, "
                          "or set kafka.bootstrap in the config")
    problem = bootstrap_problem(bootstrap)  # the config's own was checked at load; these add --kafka and the env
    if problem:
        where = "--kafka" if flag else f"env {BOOTSTRAP_ENV}" if env.get(BOOTSTRAP_ENV) else "kafka.bootstrap"
        raise ConfigError(f"{where}: {problem}")
    from_env = env_options(env)
    options = {**section.options, **from_env}
    problem = option_problem(options, lambda name: _option_source(name, from_env))  # the config's own options
    if problem:  # were checked at load; these add the environment's
        raise ConfigError(problem)
    stall_s = parse_duration(section.stall_restart)
    problem = stall_problem(section.stall_restart, stall_s, options)
    if problem:
        raise ConfigError(f"kafka.stall_restart: {problem}")
    return KafkaSettings(bootstrap=bootstrap.strip(), client_id=section.client_id, group_id=section.group_id,
                         predictions_topic=section.predictions_topic, outcomes_topic=section.outcomes_topic,
                         dead_letter_topic=section.dead_letter_topic, batch_max_records=section.batch_max_records,
                         batch_linger_ms=section.batch_linger_ms, batch_max_bytes=section.batch_max_bytes,
                         on_offset_reset=section.on_offset_reset,
                         on_key_mismatch=section.on_key_mismatch,
                         dead_letter_max_bytes=section.dead_letter_max_bytes,
                         unassigned_grace_s=parse_duration(section.unassigned_grace), stall_restart_s=stall_s,
                         database_stall_s=parse_duration(section.database_stall), options=options,
                         resolutions=resolutions or dns_names.ResolutionLog())


def _option_source(name: str, from_env: Mapping[str, Any]) -> str:
    """Where a kafka option's value came from, for error messages: its environment variable or the config field."""
    return f"{OPTION_ENV_PREFIX}{name.upper()}" if name in from_env else f"kafka.options.{name}"


class SecretFilter(logging.Filter):
    """Replaces secret values in a log record's final message by ***."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True)

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            msg = record.getMessage()
            clean = msg
            for s in self.secrets:
                clean = clean.replace(s, MASK)
            if clean != msg:
                record.msg, record.args = clean, None
        return True


def install_log_redaction(settings: KafkaSettings) -> None:
    """Scrub secret option values from every handler's records; quiet kafka-python's own (noisy) loggers."""
    filt = SecretFilter(settings.secrets())
    root = logging.getLogger()
    for handler in root.handlers:
        handler.addFilter(filt)
    level = os.environ.get(KAFKA_LOG_LEVEL_ENV, "CRITICAL").upper()
    logging.getLogger("kafka").setLevel(level)
