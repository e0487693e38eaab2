"""A Kafka bootstrap list that can name no broker is refused at start, naming where it was given (SRE tryout).

Reproduction: `driftline run --kafka 127.0.0.1:99999` (or `a:9092 b:9092`, a space for a comma) retried the
"unreachable" broker for ever; `--kafka 127.0.0.1:abc` and `[::1` stopped with "unexpected ValueError: invalid
literal for int()" naming no setting. The same in `kafka.bootstrap` loaded for every command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from driftline.config import ConfigError, Kafka, load
from driftline.kafka.settings import BOOTSTRAP_ENV, resolve
from driftline.kafka_options import bootstrap_problem

BAD = {
    "127.0.0.1:99999": "the port '99999' is not a number from 1 to 65535",
    "kafka:0": "the port '0' is not a number from 1 to 65535",
    "127.0.0.1:abc": "the port 'abc' is not a number from 1 to 65535",
    "kafka-1:9092 kafka-2:9092": "holds a space: separate servers with commas",
    "[::1": "is not [IPV6]:PORT",
    ":9092": "has no host before the port",
    "kafka-1:9092,kafka-2:": "'kafka-2:': the port '' is not a number",
    ",": "',' names no server",
    "fe80::1%eth0": "write a scoped IPv6 address in brackets ([fe80::1%eth0]:9092)",
    " , PLAINTEXT:// ": "names no server",
}
GOOD = ["kafka:9092", "kafka", "a:9092,b:9093", "a:9092,", "SASL_SSL://kafka:9093", "[::1]:9092", "[::1]", "::1",
        " kafka:9092 ", "a:9092,,b:9092",
        "[fe80::1%eth0]:9092"]


@pytest.mark.parametrize("servers", GOOD)
def test_bootstrap_lists_kafka_python_reads_are_accepted(servers: str) -> None:
    assert bootstrap_problem(servers) is None


@pytest.mark.parametrize("servers", sorted(BAD))
def test_each_source_of_a_bad_bootstrap_list_is_named(servers: str, tmp_path: Path) -> None:
    """The config field (with its line, at load, for every command), --kafka and the environment variable."""
    config = tmp_path / "c.yaml"
    config.write_text(f"kafka:\n  bootstrap: {servers!r}\n")
    with pytest.raises(ConfigError) as err:
        load(str(config))
    assert "line 2: invalid field `kafka.bootstrap`" in str(err.value) and BAD[servers] in str(err.value)
    with pytest.raises(ConfigError, match=r"^--kafka: .*" + BAD[servers][:20].replace("[", r"\[")):
        resolve(Kafka(), servers, {})
    with pytest.raises(ConfigError, match=f"^env {BOOTSTRAP_ENV}: "):
        resolve(Kafka(), None, {BOOTSTRAP_ENV: servers})


def test_run_with_a_port_out_of_range_exits_at_once(tmp_path: Path) -> None:
    """`run` refuses it with status 2 before connecting (it retried it for ever: the 60 s bound is liveness)."""
    proc = subprocess.run([sys.executable, "-m", "driftline.cli", "--db", f"sqlite:///{tmp_path / 'x.db'}", "run",
                           "--kafka", "127.0.0.1:99999", "--port", "0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "error: --kafka: '127.0.0.1:99999': the port '99999' is not a number from 1 to 65535" in proc.stderr
