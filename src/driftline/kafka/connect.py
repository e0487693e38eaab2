"""Connecting to Kafka with retries: topics checked before subscribing (a broker may auto-create a missing topic
with any partition count), then the consumer built; unreachable brokers are retried with backoff and logged."""

from __future__ import annotations

import logging
import threading
from typing import Any

from kafka.errors import KafkaConfigurationError, KafkaError

from ..config import ConfigError
from ..streak import FailureStreak
from . import topics
from .health import Backoff, ConsumerStatus
from .dlt import DeadLetterSink
from .signals import KafkaSignals
from .topic_watch import honour_auto_create
from .settings import KafkaSettings

log = logging.getLogger(__name__)


def open_consumer(settings: KafkaSettings, stop: threading.Event, backoff: Backoff, status: ConsumerStatus,
                  assignor: Any = None, outage: FailureStreak | None = None) -> Any | None:
    """A KafkaConsumer once the broker answers and both topics are co-partitioned; None when `stop` is set first.
    `assignor`: the Range assignor carrying this process's database id (group_db.py). `outage`: the streak of an
    outage already logged (a client rebuilt during it): failed attempts only remind of it, at most every 5 min
    (tryout: a broker restarted advertising a name this host cannot resolve logged a line every 15 s for good).

    Raises TopicsError for missing or not co-partitioned topics, ConfigError for settings kafka-python rejects.
    """
    from kafka import KafkaConsumer

    attempt = 0
    while not stop.is_set():
        attempt += 1
        try:
            admin = topics.open_admin(settings)
            try:
                partitions = topics.check(admin, settings)
            finally:
                admin.close()
            kwargs = settings.consumer_kwargs(assignor)
            consumer = honour_auto_create(KafkaConsumer(**kwargs), bool(kwargs.get("allow_auto_create_topics")))
        except KafkaConfigurationError as err:
            raise ConfigError(f"kafka settings rejected by kafka-python: {err}") from None
        except (KafkaError, OSError) as err:
            delay = backoff.next()
            state, status.error = settings.resolutions.failure(err, settings.bootstrap)
            if outage is None:
                log.warning("Kafka at %s %s (attempt %d): %s; retrying in %.0fs", settings.bootstrap, state, attempt,
                            status.error, delay)
            else:
                log.debug("Kafka at %s %s (attempt %d): %s", settings.bootstrap, state, attempt, status.error)
                outage.failed(ConnectionError(f"Kafka at {settings.bootstrap} {state}: {status.error}"))
            stop.wait(delay)
            continue
        backoff.reset()
        if outage is not None:
            outage.forget()  # its end is logged once by the consumer ("Kafka reachable again after …")
        log.info("connected to Kafka (%s); %d partitions per topic; joining group %s", settings.describe(),
                 partitions, settings.group_id)
        return consumer
    return None


def open_dead_letter_sink(settings: KafkaSettings, sig: KafkaSignals) -> DeadLetterSink | None:
    """The dead-letter topic's sink when one is configured; its producer is opened now when the broker answers,
    else at a later send (until then dead letters are in the database only, re-sent from there).

    Its sends never block the consumer long (max_block_ms 5 s) and it accepts records up to the payload bound
    plus headers (the broker's own limit may still refuse one: counted, re-sent with the 4 KiB copy)."""
    if not settings.dead_letter_topic:
        return None
    kwargs = settings.producer_kwargs("-dead-letters")
    kwargs.setdefault("max_block_ms", 5000)
    kwargs["max_request_size"] = max(int(kwargs.get("max_request_size", 1048576)),
                                     settings.dead_letter_max_bytes + 65536)

    def open_producer() -> Any:
        from kafka import KafkaProducer
        return honour_auto_create(KafkaProducer(**kwargs), bool(kwargs.get("allow_auto_create_topics")))

    sink = DeadLetterSink(open_producer, settings.dead_letter_topic, settings.dead_letter_max_bytes, sig)
    if sink.connect() is None:  # opened now, so a broker problem shows in the start-up log
        log.warning("dead-letter topic producer unavailable: dead letters go to the database until it opens")
    return sink
