"""A broker that advertises a name this host cannot resolve is named, with where it came from and what to fix (SRE
tryout).

Reproduction: tansu listening on 127.0.0.1:PORT with `--advertised-listener-url tcp://no-such-host.invalid:PORT`.
The bootstrap server answers, its metadata sends every request to the advertised name, and `driftline topics
create` (also `topics check`, `simulate --kafka`) ended in `error: unexpected KafkaConnectionError:
KafkaConnectionError: DNS Resolution failure (run with --log-level debug for the traceback)`, naming no host and no
setting; `run` logged `Kafka at 127.0.0.1:PORT unreachable (attempt 1): KafkaConnectionError: DNS Resolution failure`
about a bootstrap server that had answered. Fixed in driftline/kafka/dns_names.py.

The advertised name here holds a `!`, which glibc's resolver refuses before asking any DNS server: the tests send
no DNS query off the machine."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_fixtures import TansuBroker, running_broker, start_tansu
from kafka_service_support import start_service, wait_until, write_config

from driftline.cli import main
from driftline.kafka import dns_names

BAD_HOST = "no-such-host!.invalid"


@pytest.fixture(scope="module")
def misadvertised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TansuBroker]:
    """A tansu broker on 127.0.0.1 whose metadata advertises BAD_HOST (``.direct_bootstrap`` reaches it)."""
    log_dir = tmp_path_factory.mktemp("tansu-unresolved")
    with running_broker(lambda: start_tansu(advertised_host=BAD_HOST, log_dir=log_dir)) as broker:
        yield broker


@pytest.mark.parametrize("command", [["topics", "create"], ["topics", "check"], ["simulate", "--days", "1"]])
def test_a_command_names_the_advertised_host_that_does_not_resolve(
        misadvertised: TansuBroker, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    """Exit 1 with one line naming the unresolvable advertised address, that it came from the broker's metadata and
    not from kafka.bootstrap, and what to fix; before the fix: 'unexpected KafkaConnectionError: DNS Resolution
    failure'."""
    bootstrap = misadvertised.direct_bootstrap
    code = main(["--db", f"sqlite:///{tmp_path / 'd.db'}", *command, "--kafka", bootstrap])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 1, err
    assert "unexpected" not in err
    assert f"error: Kafka at {bootstrap} is unusable: the broker's metadata sends clients to " \
           f"{BAD_HOST}:{misadvertised.listen_port} (its advertised listener)" in err
    assert "kafka.bootstrap is not the problem" in err and "advertised.listeners" in err and "DNS" in err


def test_run_reports_the_unresolvable_advertised_host_and_keeps_retrying(misadvertised: TansuBroker,
                                                                        tmp_path: Path) -> None:
    """`run` treats it as an unreachable broker (retries, /readyz 503, no traceback, a clean stop on SIGTERM), and
    its log line and /readyz name the advertised address instead of calling the answering bootstrap unreachable."""
    config = write_config(tmp_path, {"predictions": "predictions", "outcomes": "outcomes"}, "unresolved")
    svc = start_service(tmp_path, config, f"sqlite:///{tmp_path / 'live.db'}", misadvertised.direct_bootstrap)
    address = f"{BAD_HOST}:{misadvertised.listen_port}"
    try:
        wait_until(lambda: "is unusable (attempt 2)" in svc.log(), 60, "two attempts logged", procs=(svc,))
        # the first database probe (every 2 s) may still say the schema is missing: a fresh file is migrated first
        status, body = wait_until(lambda: (lambda r: r if r[1].startswith("kafka") else None)(svc.get("/readyz")),
                                  10, "/readyz on Kafka", procs=(svc,))
        assert status == 503 and body.startswith(f"kafka connecting: the broker's metadata sends clients to {address}")
        assert "kafka.bootstrap is not the problem" in body
        assert svc.proc.poll() is None
    finally:
        code = svc.terminate()
    log = svc.log()
    assert code == 0, log
    assert "Traceback" not in log and f"Kafka at {misadvertised.direct_bootstrap} unreachable" not in log
    assert "(its advertised listener), a name this host cannot resolve" in log


def test_a_bootstrap_server_that_does_not_resolve_is_named_as_kafka_bootstrap() -> None:
    """A failed lookup of a bootstrap server is blamed on kafka.bootstrap (not on advertised listeners), and an
    address that resolves again is forgotten; the record is the process's ResolutionLog, not a module global (a
    fresh one here: no other test's lookups, nothing to clear afterwards)."""
    from kafka.errors import KafkaTimeoutError

    resolutions = dns_names.ResolutionLog()
    resolutions.record_failure("kafka-typo", 9092, "Name or service not known", now=100.0)
    err = KafkaTimeoutError("Unable to bootstrap from ['kafka-typo:9092']")
    state, reason = resolutions.failure(err, "kafka-typo:9092", now=101.0)
    assert state == "unreachable"
    assert reason.startswith("kafka.bootstrap server kafka-typo:9092 cannot be resolved by this host (Name or "
                             "service not known): correct the name in --kafka")
    assert resolutions.failure(err, "kafka-typo:9092", now=100.0 + dns_names.RECENT_S + 1)[1] == \
        "KafkaTimeoutError: Unable to bootstrap from ['kafka-typo:9092']"
    assert dns_names.ResolutionLog().failure(err, "kafka-typo:9092", now=101.0) == ("unreachable", str(err))
    resolutions.record_success("kafka-typo", 9092)
    assert resolutions.failure(err, "kafka-typo:9092", now=101.0) == ("unreachable", str(err))


def test_a_connected_run_names_the_advertised_host_once_the_broker_advertises_one_it_cannot_resolve(
        caplog: pytest.LogCaptureFixture) -> None:
    """Verification tryout: `run` consuming from tansu on 127.0.0.1:PORT; the broker restarted advertising
    no-such-host!.invalid:PORT. For the 90 s until kafka.stall_restart rebuilt the client, /readyz said "kafka
    unreachable for 0s (group coordinator unknown: the broker is down, or it answers but cannot name the group's
    coordinator)" and the log "Kafka unreachable (group coordinator lost: ...)", naming neither the host nor the
    setting, though the connect path (after the rebuild) did. Now the status and the log name it as well."""
    import logging
    from types import SimpleNamespace

    from driftline.kafka.health import ConsumerStatus
    from driftline.kafka.upkeep import Upkeep

    lost = SimpleNamespace(_coordinator=SimpleNamespace(coordinator_id=None, state="<stable>"),
                           config={"session_timeout_ms": 6000},
                           metrics=lambda: {"consumer-coordinator-metrics": {"last-heartbeat-seconds-ago": 1.0}})
    resolutions = dns_names.ResolutionLog()  # the process's record, injected with the settings
    me = SimpleNamespace(consumer=lost, rebalance_seen_at=-math.inf, broker_down_since=None,
                         status=ConsumerStatus(phase="consuming", broker_ok=True),
                         settings=SimpleNamespace(bootstrap="127.0.0.1:19093", resolutions=resolutions))
    resolutions.record_failure(BAD_HOST, 19093, "Name or service not known")
    with caplog.at_level(logging.WARNING, logger="driftline.kafka.consumer"):
        Upkeep._broker_status(me, 100.0)  # type: ignore[arg-type]
    problem = me.status.kafka_problem(101.0) or ""
    for text in (problem, caplog.text):
        assert f"the broker's metadata sends clients to {BAD_HOST}:19093 (its advertised listener)" in text
        assert "set the broker's advertised.listeners" in text
    assert problem.startswith("kafka unreachable for 1s: ")


def test_missing_topics_get_the_advertised_brokers_resolved_so_a_bad_name_is_named_first() -> None:
    """Live race (tests/test_kafka_topics_gone.py): a consumer still joining when its broker restarted empty and
    advertising BAD_HOST had no connection for kafka-python to retry, so the name was never looked up and /readyz
    named the missing topics only, for good. While topics are missing the advertised brokers are resolved (at most
    every 30 s), and the status names the bad address first."""
    import logging
    from types import SimpleNamespace

    from driftline.kafka.health import ConsumerStatus
    from driftline.kafka.topic_watch import TopicWatch

    clock = [100.0]
    advertised = [SimpleNamespace(host=BAD_HOST, port=19093)]
    cluster = SimpleNamespace(_last_successful_refresh_ms=1, brokers=lambda: advertised, topics=lambda: set(),
                              request_update=lambda: None)
    consumer = SimpleNamespace(_cluster=cluster)
    watch = TopicWatch(("predictions", "outcomes"), "127.0.0.1:19093", logging.getLogger("test"), lambda: clock[0])
    resolutions = dns_names.ResolutionLog(lambda: clock[0])
    watch.observe(consumer)
    assert watch.brokers_to_resolve(consumer) == [(BAD_HOST, 19093)]
    assert watch.brokers_to_resolve(consumer) == []  # not again within 30 s
    resolutions.check(BAD_HOST, 19093)  # what Upkeep._housekeeping does with each
    found = resolutions.explain("127.0.0.1:19093")
    assert found is not None and found.host == BAD_HOST
    status = ConsumerStatus(phase="consuming", broker_ok=True, missing_topics=watch.problem() or "",
                            unresolved=found.message("127.0.0.1:19093"))
    problem = status.kafka_problem(clock[0]) or ""
    assert problem.index(f"{BAD_HOST}:19093 (its advertised listener)") < problem.index("predictions, outcomes do not")
    clock[0] += 31
    assert watch.brokers_to_resolve(consumer) == [(BAD_HOST, 19093)]
