"""`driftline simulate --kafka` counts only what the broker acknowledged and stops promptly when interrupted with the
broker gone (SRE tryout).

Reproduction: tansu on a free port, `driftline topics create --kafka 127.0.0.1:PORT --partitions 2`, then
`driftline simulate --days 7 --per-day 1000 --end 2026-12-07T00:00:00Z --seed 21 --kafka 127.0.0.1:PORT --rate 500`;
`kill -KILL` tansu after 4 s, SIGTERM the simulator 3 s later. Before the fix it did not stop (an unbounded flush
waiting out kafka-python's 120 s delivery timeout; a second Ctrl-C said "nothing stored is lost: an unfinished batch
or job is not stored", which means nothing for a producer), and the summary counted every record sent as produced.
Here the broker is cut by stopping a forwarder, so that it keeps what it acknowledged for the read-back."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_fixtures import TansuBroker, create_topics, unique_name
from kafka_service_support import write_config

from driftline.cli import main
from driftline.commands import serve
from driftline.kafka import producer as producer_module

CUT_AT = 400
"""Events sent (and acknowledged: the test flushes first) before the broker is cut off."""
STOP_AFTER = 150
"""Events sent into the cut before the test sends itself SIGTERM."""


def _read_back(bootstrap: str, topics: dict[str, str]) -> int:
    """Records a consumer reads from both topics from the beginning: polled until three polls in a row bring none
    (tansu 0.6 lists a partition's end low until it is fetched: test_kafka_lag_ends)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        parts = [TopicPartition(t, p) for t in topics.values() for p in sorted(consumer.partitions_for_topic(t))]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        n, empty = 0, 0
        while empty < 3:
            got = sum(len(batch) for batch in consumer.poll(timeout_ms=1000).values())
            n, empty = n + got, 0 if got else empty + 1
        return n
    finally:
        consumer.close()


def test_interrupted_with_the_broker_gone_reports_what_was_not_delivered(
        kafka_behind_forwarder: TansuBroker, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The broker is cut after CUT_AT acknowledged events, SIGTERM comes STOP_AFTER events later: the summary's
    count is what a consumer reads back, the rest is reported as not delivered, exit 1; before the fix the summary
    counted every event sent and exited only when kafka-python's delivery timeout failed the rest. A second
    Ctrl-C's line no longer talks about stored batches."""
    broker = kafka_behind_forwarder
    assert broker.forwarder is not None
    topics = {"predictions": unique_name("p"), "outcomes": unique_name("o")}
    create_topics(broker.bootstrap, topics.values(), 2)
    config = write_config(tmp_path, topics, unique_name("g"))
    doc = yaml.safe_load(config.read_text())  # without the fix, the summary waited for these to fail the rest
    doc["kafka"]["options"].update(request_timeout_ms=4000, delivery_timeout_ms=8000)
    config.write_text(yaml.safe_dump(doc))
    producers: list[Any] = []
    real_open = producer_module.open_producer

    def recording_open(*args: Any, **kwargs: Any) -> Any:
        producers.append(real_open(*args, **kwargs))
        return producers[-1]

    class CuttingPacer(producer_module.Pacer):
        """Flushes and cuts the broker off before event CUT_AT + 1, sends SIGTERM before event CUT_AT + STOP_AFTER."""

        paced = 0  # events paced so far (Pacer.n stays 0 without --rate)

        def wait(self) -> None:
            if self.paced == CUT_AT:
                producers[0].flush()
                broker.forwarder.stop()  # type: ignore[union-attr]
            elif self.paced == CUT_AT + STOP_AFTER:
                os.kill(os.getpid(), signal.SIGTERM)
            self.paced += 1
            super().wait()

    again: list[str] = []
    real_install = serve.install_stop_handlers
    monkeypatch.setattr(serve, "install_stop_handlers", lambda stop, *a: (again.extend(a), real_install(stop, *a)))
    monkeypatch.setattr(producer_module, "open_producer", recording_open)
    monkeypatch.setattr(producer_module, "Pacer", CuttingPacer)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        code = main(["--config", str(config), "simulate", "--days", "2", "--per-day", "1000", "--seed", "21",
                     "--end", "2026-12-07T00:00:00Z", "--kafka", broker.bootstrap])
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    err = " ".join(capsys.readouterr().err.split())
    assert code == 1, err
    m = re.search(r"produced ([\d,]+) of ([\d,]+) events \(.*\) in [\d.]+s \(interrupted\): only those the broker "
                  r"acknowledged", err)
    assert m is not None, err
    delivered, sent = (int(g.replace(",", "")) for g in m.groups())
    assert delivered == CUT_AT and sent >= CUT_AT + STOP_AFTER, err
    assert f"waiting up to {producer_module.STOP_WAIT_S:g}s for the broker to acknowledge" in err
    assert f"error: {sent - delivered:,} events not delivered: " in err
    broker.forwarder.start()  # the same port: the broker kept what it acknowledged
    assert _read_back(broker.bootstrap, topics) == delivered
    # a second Ctrl-C would say what is at stake for a producer, not "nothing stored is lost: an unfinished batch..."
    assert len(again) == 1 and "stored" not in again[0] and "acknowledg" in again[0], again

