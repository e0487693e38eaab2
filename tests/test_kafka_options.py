"""kafka.options are checked when the config loads, from a static table of kafka-python's settings (no kafka-python
import): a config `run` refuses is refused by every command. The table is compared with the installed kafka-python,
so it cannot drift."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from driftline import kafka_options
from driftline.config import ConfigError, load


def test_the_table_matches_the_installed_kafka_python() -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

    assert kafka_options.CONSUMER == set(KafkaConsumer.DEFAULT_CONFIG)
    assert kafka_options.PRODUCER == set(KafkaProducer.DEFAULT_CONFIG)
    assert kafka_options.ADMIN == set(KafkaAdminClient.DEFAULT_CONFIG)
    kinds: dict[str, object] = {}
    for cls in (KafkaConsumer, KafkaProducer, KafkaAdminClient):
        for name, default in cls.DEFAULT_CONFIG.items():
            if default is not None:
                kinds.setdefault(name, default)
    plain = {k: v for k, v in kinds.items() if isinstance(v, (bool, int, float, str))}
    assert set(kafka_options.DEFAULTS) == set(plain)
    for name, default in plain.items():
        assert type(kafka_options.DEFAULTS[name]) is type(default), name
        if name != "client_id":  # names the installed version
            assert kafka_options.DEFAULTS[name] == default, name


@pytest.mark.parametrize(("options", "message"), [
    ("requst_timeout_ms: 5000", r"line 4: invalid field `kafka.options.requst_timeout_ms`: unknown kafka-python "
                                r"setting \(did you mean request_timeout_ms\?\)$"),
    ("request_timeout_ms: abc", r"line 4: invalid field `kafka.options.request_timeout_ms`: 'abc' is not a number, "
                                r"as kafka-python's request_timeout_ms is \(default 30000\)$"),
    ("check_crcs: 7", r"invalid field `kafka.options.check_crcs`: 7 is not true or false"),
    ("security_protocol: 5", r"invalid field `kafka.options.security_protocol`: 5 is not text"),
    ("enable_auto_commit: true", r"invalid field `kafka.options.enable_auto_commit`: cannot be set \(driftline sets"),
    ("isolation_level: committed", r"invalid field `kafka.options.isolation_level`: 'committed' is neither"),
    ("max_poll_interval_ms: 1.5", r"invalid field `kafka.options.max_poll_interval_ms`: 1.5 is not a positive whole"),
    ("max_poll_interval_ms: 200000", r"invalid field `kafka.stall_restart`: 90s must exceed the rebalance timeout"),
])
def test_kafka_options_run_would_refuse_are_refused_at_load_naming_the_field(
        tmp_path: Path, options: str, message: str) -> None:
    """Tryout: a config with `requst_timeout_ms` loaded for every command and was refused only by `run`."""
    path = tmp_path / "c.yaml"
    path.write_text(f"kafka:\n  bootstrap: b:9092\n  options:\n    {options}\n")
    with pytest.raises(ConfigError, match=message):
        load(path)


def test_good_options_load_and_a_secret_of_the_wrong_kind_is_not_repeated(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("kafka:\n  options:\n    request_timeout_ms: 40000\n    security_protocol: SASL_SSL\n"
                    "    sasl_plain_password: hunter22\n    max_poll_interval_ms: 60000\n  stall_restart: 2m\n")
    assert load(path).kafka.options["request_timeout_ms"] == 40000
    path.write_text("kafka:\n  options:\n    sasl_kerberos_service_name: 123456\n")
    with pytest.raises(ConfigError, match=r"sasl_kerberos_service_name`: 123456 is not text"):
        load(path)
    assert kafka_options.option_problem({"sasl_oauth_token": 1}, str) is not None  # unknown, named without value


def test_loading_a_config_with_kafka_options_imports_no_kafka_python(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("kafka:\n  options:\n    request_timeout_ms: 40000\n")
    code = f"import sys; from driftline.config import load; load({str(path)!r}); print('kafka' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_acks_all_is_a_kafka_python_setting() -> None:
    """kafka-python's KafkaProducer takes acks 0, 1, -1 or 'all'; 'all' was refused as "not a number" (by `run`,
    and by the load since it checks options)."""
    from kafka import KafkaProducer

    assert "self.config['acks'] == 'all'" in __import__("inspect").getsource(KafkaProducer.__init__)
    assert kafka_options.option_problem({"acks": "all"}, str) is None
    assert kafka_options.option_problem({"acks": "most"}, str) is not None


@pytest.mark.parametrize("value", [5, 2, 1.5, 1.0, True, "al", "ALL", None])
def test_acks_is_one_of_the_values_kafka_python_takes(value: object) -> None:
    """Verification tryout: `acks: 5` (or 1.5) loaded, and kafka-python does not check it: the broker refuses it
    (InvalidRequiredAcks) at the first record sent to the dead-letter topic; `acks: al` said "not a number",
    never naming 'all'."""
    problem = kafka_options.option_problem({"acks": value}, lambda n: f"kafka.options.{n}")
    yaml_bool = (" (YAML reads an unquoted yes, no, on, off, true or false as a boolean: write the number)"
                 if isinstance(value, bool) else "")  # `acks: yes` (test_config_scalars.py)
    assert problem == (f"kafka.options.acks: {value!r} is not one of 0, 1, -1 or 'all', as kafka-python's acks is "
                       f"(default -1){yaml_bool}")
    for ok in (0, 1, -1, "all"):
        assert kafka_options.option_problem({"acks": ok}, str) is None
