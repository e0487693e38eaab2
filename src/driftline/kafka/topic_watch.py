"""Subscribed topics the broker no longer has (a broker restarted empty, a topic deleted), and clients that never
create a topic themselves.

Tryout: `run` consumed from tansu (memory store); tansu was killed and restarted on the same port, its topics gone.
kafka-python 3.0.12 builds its cluster metadata without the client's `allow_auto_create_topics`, so the running
consumer's next metadata request asked the broker to create the topics and they came back with the broker's default
partition count (4 where `topics create --partitions 2` had made 2), silently; with auto-creation off, nothing could be
consumed while /readyz kept saying "kafka ok" until the unassigned grace ran out. `honour_auto_create` puts the
setting where kafka-python reads it; `TopicWatch` reads the consumer's metadata, and while a subscribed topic is
missing /readyz and driftline_kafka_up say so (one ERROR line at the start, one line at the end), and the metadata is
asked for again every `ask_every_s` so recreated topics are consumed within seconds, not after metadata_max_age_ms."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

ASK_EVERY_S = 2.0
"""How often the metadata is asked for again while a subscribed topic is missing."""


def honour_auto_create(client: Any, allowed: bool) -> Any:
    """The client with `allow_auto_create_topics` set where its metadata requests read it (kafka-python 3.0.12 drops
    the client's setting and asks brokers to create every topic it looks up); returned for chaining."""
    holders = (getattr(client, "_cluster", None), getattr(getattr(client, "_client", None), "cluster", None),
               getattr(client, "_metadata", None))
    for cluster in holders:
        config = getattr(cluster, "config", None)
        if isinstance(config, dict) and "allow_auto_create_topics" in config:
            config["allow_auto_create_topics"] = allowed
    return client


def cluster_of(consumer: Any) -> Any:
    """kafka-python's cluster metadata of a consumer (None for a stand-in without one)."""
    return getattr(consumer, "_cluster", None) or getattr(getattr(consumer, "_client", None), "cluster", None)


def known_topics(consumer: Any) -> set[str] | None:
    """The topics the consumer's last metadata response named; None before any answer or without brokers (then the
    broker is unreachable, which health.py reports, not missing topics)."""
    cluster = cluster_of(consumer)
    refreshed = getattr(cluster, "_last_successful_refresh_ms", 0)
    if cluster is None or not isinstance(refreshed, (int, float)) or not refreshed:
        return None
    try:
        if not cluster.brokers():
            return None
        return set(cluster.topics())
    except Exception:  # noqa: BLE001 - another kafka-python layout: nothing to judge
        return None


def missing_reason(missing: Sequence[str], bootstrap: str) -> str:
    """/readyz's reason while subscribed topics are missing: which, and what to do."""
    names = ", ".join(missing)
    return (f"topic(s) {names} do not exist on the broker (restarted empty, or deleted): nothing can be consumed; "
            f"create them with the partition count they had (`driftline topics create --kafka {bootstrap} "
            "--partitions N`): consuming resumes by itself")


class TopicWatch:
    """Which subscribed topics the consumer's metadata lacks; logs the start of a gap once at ERROR and its end once."""

    def __init__(self, topics: Sequence[str], bootstrap: str, logger: logging.Logger,
                 monotonic: Callable[[], float], ask_every_s: float = ASK_EVERY_S) -> None:
        self.topics, self.bootstrap, self.log, self.monotonic = tuple(topics), bootstrap, logger, monotonic
        self.ask_every_s = ask_every_s
        self.missing: tuple[str, ...] = ()
        self.since: float | None = None
        self.next_ask = 0.0
        self.next_lookup = 0.0

    def problem(self) -> str | None:
        """Why nothing can be consumed (None while every subscribed topic exists)."""
        missing = self.missing
        return missing_reason(missing, self.bootstrap) if missing else None

    def brokers_to_resolve(self, consumer: Any, every_s: float = 30.0) -> list[tuple[str, int]]:
        """While topics are missing, at most every `every_s`: the broker addresses the metadata advertises, to be
        resolved (a bad advertised name is the first thing to fix: /readyz names it before the topics)."""
        now = self.monotonic()
        if not self.missing or now < self.next_lookup:
            return []
        self.next_lookup = now + every_s
        try:
            return [(b.host, int(b.port)) for b in cluster_of(consumer).brokers()]
        except Exception:  # noqa: BLE001 - no cluster metadata (a stand-in): nothing to resolve
            return []

    def reset(self) -> str:
        """End a gap (the topics exist again, or a new client was connected after checking them): the line to log
        at its end, "" when none was going on."""
        missing, since, self.missing, self.since = self.missing, self.since, (), None
        self.next_lookup = 0.0
        if not missing:
            return ""
        return (f"topic(s) {', '.join(missing)} exist again after {self.monotonic() - (since or 0.0):.0f}s (their "
                "stored positions are checked against the new logs: kafka.on_offset_reset)")

    def observe(self, consumer: Any) -> str:
        """Compare the consumer's metadata with the subscription; while a topic is missing, ask for metadata again.
        Returns what to log when the gap ends (the caller then subscribes anew: a member that joined while the
        topics were missing stayed stable with no partition after they were recreated, kafka-python 3.0.12 on tansu,
        70 s and counting), else ""."""
        known = known_topics(consumer)
        if known is None:
            return ""
        now = self.monotonic()
        missing = tuple(t for t in self.topics if t not in known)
        if missing and not self.missing:
            self.since = now
            self.log.error("%s", missing_reason(missing, self.bootstrap))
        back = self.reset() if not missing else ""
        self.missing = missing
        if missing and now >= self.next_ask:
            self.next_ask = now + self.ask_every_s
            cluster = cluster_of(consumer)
            if cluster is not None:
                cluster.request_update()  # sent by the next poll: recreated topics are seen within seconds
        return back
