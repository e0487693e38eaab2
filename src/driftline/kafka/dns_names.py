"""Broker addresses this host could not resolve, named with where they came from and what to fix.

kafka-python reports a name it cannot resolve as `KafkaConnectionError: DNS Resolution failure`, naming neither the
host nor where it came from (its lookup only logs a warning, and driftline quiets kafka-python's loggers). The usual
cause is a broker whose advertised listener is a name its clients cannot resolve: the bootstrap address answers, then
the metadata sends every request to `advertised.listeners`, and `topics create` ended in "unexpected
KafkaConnectionError: DNS Resolution failure" while `run` logged "Kafka at 127.0.0.1:9092 unreachable" about a
bootstrap server that had answered. `install` wraps kafka-python's lookup so each failed (host, port) is remembered
until the name resolves again, in the process's ResolutionLog; `explain` says which address it is, whether it came from kafka.bootstrap or from the
broker's metadata, and what to change."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

RECENT_S = 120.0
"""A failed lookup is part of an explanation for this long (kafka-python retries a broker every second or so)."""


@dataclass(frozen=True)
class Unresolved:
    """A broker address whose name did not resolve: `reason` is the resolver's answer."""

    host: str
    port: int
    reason: str
    at: float

    def message(self, bootstrap: str) -> str:
        """What went wrong and what to fix, telling a bootstrap server from an address the broker advertises."""
        address = f"{self.host}:{self.port}"
        if in_bootstrap(self.host, self.port, bootstrap):
            return (f"kafka.bootstrap server {address} cannot be resolved by this host ({self.reason}): correct the "
                    "name in --kafka, DRIFTLINE_KAFKA_BOOTSTRAP or kafka.bootstrap, or this host's DNS")
        return (f"the broker's metadata sends clients to {address} (its advertised listener), a name this host cannot "
                f"resolve ({self.reason}); the bootstrap server {bootstrap} answered, so kafka.bootstrap is not the "
                f"problem: set the broker's advertised.listeners to an address its clients can resolve, or make "
                f"{self.host} resolvable here (DNS, /etc/hosts)")


class ResolutionLog:
    """The broker addresses that failed to resolve and have not resolved since: one per process, created by its
    edge (the CLI) and handed to the Kafka settings, whose clients' lookups record into it (`install`)."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.monotonic = monotonic
        self._failed: dict[tuple[str, int], Unresolved] = {}
        self._lock = threading.Lock()

    def record_failure(self, host: str, port: int, reason: str, now: float | None = None) -> None:
        """Remember that `host` did not resolve (kafka-python's network thread calls this through the wrapped
        lookup)."""
        with self._lock:
            self._failed[(host, int(port))] = Unresolved(host, int(port), reason,
                                                          self.monotonic() if now is None else now)

    def record_success(self, host: str, port: int) -> None:
        """Forget a failure of `host`: its name resolves again."""
        with self._lock:
            self._failed.pop((host, int(port)), None)

    def check(self, host: str, port: int) -> None:
        """Resolve `host` now and record the answer: a broker's advertised name that no client lookup has tried yet
        (topics missing on a broker restarted with a bad advertised listener: the client's idle connection to it was
        never retried, so /readyz named the topics only)."""
        try:
            socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as err:
            self.record_failure(host, port, getattr(err, "strerror", None) or str(err))
            return
        self.record_success(host, port)

    def failed(self, host: str, port: int, now: float | None = None) -> bool:
        """Whether `host:port` failed to resolve within RECENT_S and has not resolved since."""
        return any(u.host == host and u.port == int(port) for u in self.failures(now))

    def failures(self, now: float | None = None, recent_s: float = RECENT_S) -> list[Unresolved]:
        """Addresses that failed to resolve within `recent_s` and have not resolved since, newest first."""
        now = self.monotonic() if now is None else now
        with self._lock:
            found = [u for u in self._failed.values() if now - u.at <= recent_s]
        return sorted(found, key=lambda u: u.at, reverse=True)

    def explain(self, bootstrap: str, now: float | None = None) -> Unresolved | None:
        """The unresolvable broker address to name in an error (an advertised one before a bootstrap one), or None."""
        found = self.failures(now)
        if not found:
            return None
        found.sort(key=lambda u: in_bootstrap(u.host, u.port, bootstrap))  # stable: newest advertised one first
        return found[0]

    def before(self, problem: str, bootstrap: str, now: float | None = None) -> str:
        """`problem` (topics missing) after the unresolvable broker address when there is one (`first_fix`)."""
        from .health import first_fix

        found = self.explain(bootstrap, now)
        return problem if found is None else first_fix(found.message(bootstrap), problem)

    def failure(self, err: BaseException, bootstrap: str, now: float | None = None) -> tuple[str, str]:
        """(state, reason) of a Kafka client error for 'Kafka at BOOTSTRAP <state>: <reason>': 'unreachable' with
        kafka-python's text, the unresolvable name and what to fix added when a lookup failed; 'is unusable' when
        the bootstrap server answered and the address it advertises does not resolve."""
        from .health import describe_error

        text = describe_error(err)
        found = self.explain(bootstrap, now)
        if found is None:
            return "unreachable", text
        state = "unreachable" if in_bootstrap(found.host, found.port, bootstrap) else "is unusable"
        return state, f"{found.message(bootstrap)} (kafka-python: {text})"


def in_bootstrap(host: str, port: int, bootstrap: str) -> bool:
    """Whether host:port is one of the bootstrap servers, read as kafka-python reads the list."""
    from kafka.cluster import collect_hosts

    try:
        servers = collect_hosts(bootstrap)
    except ValueError:
        return False
    return any(h.lower() == host.lower() and int(p) == int(port) for h, p, _ in servers)


def _reason(err: BaseException) -> str:
    """The resolver's own words ('Name or service not known') from kafka-python's wrapped lookup error."""
    cause = err.__cause__ or err.__context__
    if isinstance(cause, socket.gaierror) and cause.strerror:
        return cause.strerror
    return str(err)


def install(resolutions: ResolutionLog) -> bool:
    """Wrap kafka-python's DNS lookup so failures are recorded in `resolutions` (idempotent; another log given later
    takes over: the lookup is kafka-python's, one per process); False when its layout differs."""
    try:
        from kafka.errors import KafkaConnectionError
        from kafka.net.inet import KafkaNetSocket
    except ImportError:  # another kafka-python layout: nothing to wrap
        return False
    current: Callable[..., Any] = KafkaNetSocket.dns_lookup
    if getattr(current, "driftline_records", None) is resolutions:
        return True
    original: Callable[..., Any] = getattr(current, "driftline_original", current)

    def dns_lookup(self: Any, host: str, port: int, raise_error: bool = False) -> Any:
        """kafka-python's lookup, the failed name recorded (its own warning kept at DEBUG)."""
        try:
            found = original(self, host, port, True)
        except KafkaConnectionError as err:
            resolutions.record_failure(host, port, _reason(err))
            log.debug("%s", err)
            if raise_error:
                raise
            return []
        resolutions.record_success(host, port)
        return found

    dns_lookup.driftline_records = resolutions  # type: ignore[attr-defined]
    dns_lookup.driftline_original = original  # type: ignore[attr-defined]
    KafkaNetSocket.dns_lookup = dns_lookup  # type: ignore[method-assign]
    return True
