"""kafka-python 3.x client settings, as a static table: the names KafkaConsumer, KafkaProducer and KafkaAdminClient
accept (their DEFAULT_CONFIG keys) and the defaults that tell an option's kind, so `kafka.options` is checked when
the config loads without importing kafka-python (kept out of the fast commands for start-up time).

tests/test_kafka_options.py compares the table with the installed kafka-python's DEFAULT_CONFIG, so it cannot drift.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from typing import Any

_INF = float("inf")

CONSUMER = frozenset({
    "allow_auto_create_topics", "api_version", "auto_commit_interval_ms", "auto_offset_reset", "bootstrap_servers",
    "bootstrap_timeout_ms", "check_crcs", "client_dns_lookup", "client_id", "client_rack",
    "connections_max_idle_ms", "consumer_timeout_ms", "default_offset_commit_callback", "enable_auto_commit",
    "enable_incremental_fetch_sessions", "exclude_internal_topics", "fetch_max_bytes", "fetch_max_wait_ms",
    "fetch_min_bytes", "group_id", "group_instance_id", "heartbeat_interval_ms", "isolation_level", "kafka_client",
    "key_deserializer", "max_in_flight_requests_per_connection", "max_partition_fetch_bytes",
    "max_poll_interval_ms", "max_poll_records", "metadata_max_age_ms", "metric_group_prefix", "metric_reporters",
    "metrics_enabled", "metrics_num_samples", "metrics_sample_window_ms", "partition_assignment_strategy",
    "proxy_url", "receive_buffer_bytes", "receive_message_max_bytes", "reconnect_backoff_max_ms",
    "reconnect_backoff_ms", "request_timeout_ms", "retry_backoff_ms", "sasl_kerberos_domain_name",
    "sasl_kerberos_name", "sasl_kerberos_service_name", "sasl_mechanism", "sasl_oauth_token_provider",
    "sasl_plain_password", "sasl_plain_username", "security_protocol", "selector", "send_buffer_bytes",
    "session_timeout_ms", "socket_options", "socks5_proxy", "ssl_cafile", "ssl_certfile", "ssl_check_hostname",
    "ssl_ciphers", "ssl_context", "ssl_crlfile", "ssl_keyfile", "ssl_password", "value_deserializer"})

PRODUCER = frozenset({
    "acks", "allow_auto_create_topics", "api_version", "batch_size", "bootstrap_servers", "bootstrap_timeout_ms",
    "client_dns_lookup", "client_id", "compression_type", "connections_max_idle_ms", "delivery_timeout_ms",
    "enable_idempotence", "kafka_client", "key_serializer", "linger_ms", "max_block_ms",
    "max_in_flight_requests_per_connection", "max_request_size", "metadata_max_age_ms", "metric_reporters",
    "metrics_enabled", "metrics_num_samples", "metrics_sample_window_ms", "partitioner", "proxy_url",
    "receive_buffer_bytes", "receive_message_max_bytes", "reconnect_backoff_max_ms", "reconnect_backoff_ms",
    "request_timeout_ms", "retries", "retry_backoff_ms", "sasl_kerberos_domain_name", "sasl_kerberos_name",
    "sasl_kerberos_service_name", "sasl_mechanism", "sasl_oauth_token_provider", "sasl_plain_password",
    "sasl_plain_username", "security_protocol", "selector", "send_buffer_bytes", "socket_options", "socks5_proxy",
    "ssl_cafile", "ssl_certfile", "ssl_check_hostname", "ssl_ciphers", "ssl_context", "ssl_crlfile", "ssl_keyfile",
    "ssl_password", "transaction_timeout_ms", "transactional_id", "value_serializer"})

ADMIN = frozenset({
    "api_version", "bootstrap_servers", "bootstrap_timeout_ms", "client_dns_lookup", "client_id",
    "connections_max_idle_ms", "kafka_client", "max_in_flight_requests_per_connection", "metadata_max_age_ms",
    "metric_reporters", "metrics_num_samples", "metrics_sample_window_ms", "proxy_url", "receive_buffer_bytes",
    "receive_message_max_bytes", "reconnect_backoff_max_ms", "reconnect_backoff_ms", "request_timeout_ms",
    "retry_backoff_ms", "sasl_kerberos_domain_name", "sasl_kerberos_name", "sasl_kerberos_service_name",
    "sasl_mechanism", "sasl_oauth_token_provider", "sasl_plain_password", "sasl_plain_username",
    "security_protocol", "selector", "send_buffer_bytes", "socket_options", "socks5_proxy", "ssl_cafile",
    "ssl_certfile", "ssl_check_hostname", "ssl_context", "ssl_crlfile", "ssl_keyfile", "ssl_password"})


DEFAULTS: dict[str, bool | int | float | str] = {
    "acks": -1, "allow_auto_create_topics": True, "auto_commit_interval_ms": 5000, "auto_offset_reset": "latest",
    "batch_size": 16384, "bootstrap_servers": "localhost", "bootstrap_timeout_ms": 30000, "check_crcs": True,
    "client_dns_lookup": "use_all_dns_ips", "client_id": "kafka-python-3", "client_rack": "",
    "connections_max_idle_ms": 540000, "consumer_timeout_ms": _INF, "delivery_timeout_ms": 120000,
    "enable_auto_commit": True, "enable_idempotence": True, "enable_incremental_fetch_sessions": True,
    "exclude_internal_topics": True, "fetch_max_bytes": 52428800, "fetch_max_wait_ms": 500, "fetch_min_bytes": 1,
    "heartbeat_interval_ms": 3000, "isolation_level": "read_uncommitted", "linger_ms": 0, "max_block_ms": 60000,
    "max_in_flight_requests_per_connection": 5, "max_partition_fetch_bytes": 1048576, "max_poll_interval_ms":
    300000, "max_poll_records": 500, "max_request_size": 1048576, "metadata_max_age_ms": 300000,
    "metric_group_prefix": "consumer", "metrics_enabled": True, "metrics_num_samples": 2,
    "metrics_sample_window_ms": 30000, "receive_message_max_bytes": 100000000, "reconnect_backoff_max_ms": 30000,
    "reconnect_backoff_ms": 50, "request_timeout_ms": 30000, "retries": _INF, "retry_backoff_ms": 100,
    "sasl_kerberos_service_name": "kafka", "security_protocol": "PLAINTEXT", "session_timeout_ms": 45000,
    "ssl_check_hostname": True, "transaction_timeout_ms": 60000}
"""The default of every setting whose first non-None default (consumer, then producer, then admin) is a boolean, a
number or text: an option given must be of the same kind (client_id's default names the installed version)."""

FORCED = ("enable_auto_commit", "partition_assignment_strategy", "group_id", "key_deserializer",
          "value_deserializer", "key_serializer", "value_serializer", "bootstrap_servers", "client_id",
          "auto_offset_reset")
"""Settings driftline owns: manual commits, Range assignment, the group, (de)serialisation and offset resets
(kafka-python's own reset would move a position silently; `kafka.on_offset_reset` decides, with a log line)."""

REBALANCE_MS = 30_000
"""driftline's default max_poll_interval_ms (the rebalance timeout; see kafka.settings.CONSUMER_DEFAULTS)."""
SESSION_MS = 10_000
"""driftline's default session_timeout_ms."""

SECRET_KEY = re.compile(r"password|secret|token|credential|jaas|private", re.IGNORECASE)
MASK = "***"


ONE_OF: dict[str, tuple[Any, ...]] = {"acks": (0, 1, -1, "all")}
"""Options whose values are a fixed set (KafkaProducer: acks 0, 1, -1 or 'all'; it does not check, and the broker
refuses any other with InvalidRequiredAcks at the first record sent to the dead-letter topic)."""


def _kind(default: Any) -> str:
    """How an option of this default's kind is named in a message."""
    return "true or false" if isinstance(default, bool) else "a number" if isinstance(default, (int, float)) else "text"


def _fits(value: Any, default: Any) -> bool:
    """Whether `value` is of the kind of kafka-python's `default` (a boolean, a number, text)."""
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, str)


def option_problem(options: Mapping[str, Any], source: Callable[[str], str]) -> str | None:
    """The first problem of kafka-python `options` as 'SOURCE: why' (source(name): where the option was written,
    `kafka.options.x` or its environment variable), None when there is none. Checked: a setting driftline owns, a
    name kafka-python does not have (with the closest that it does), isolation_level, the rebalance and session
    timeouts (positive whole milliseconds), an option of another kind than its default."""
    for name in options:
        if name in FORCED:
            return (f"{source(name)}: cannot be set (driftline sets it: manual commits after the database "
                    "transaction, RangePartitionAssignor, bootstrap/client_id/group_id from their own settings, "
                    "offset resets from kafka.on_offset_reset)")
    known = CONSUMER | PRODUCER | ADMIN
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else ""
            return f"{source(name)}: unknown kafka-python setting{hint}"
    isolation = options.get("isolation_level", "read_committed")
    if isolation not in ("read_committed", "read_uncommitted"):
        return (f"{source('isolation_level')}: {isolation!r} is neither read_committed (default) nor "
                "read_uncommitted")
    for name in ("max_poll_interval_ms", "session_timeout_ms"):
        value = options.get(name, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            return f"{source(name)}: {value!r} is not a positive whole number of milliseconds"
    for name, value in options.items():
        allowed = ONE_OF.get(name)
        if allowed is not None:
            if type(value) not in (int, str) or value not in allowed:
                return (f"{source(name)}: {value!r} is not one of {', '.join(map(repr, allowed[:-1]))} or "
                        f"{allowed[-1]!r}, as kafka-python's {name} is (default {DEFAULTS.get(name)!r})"
                        f"{_yaml_bool_hint(value, True)}")
            continue
        default = DEFAULTS.get(name)
        if default is not None and not _fits(value, default):
            shown = MASK if SECRET_KEY.search(name) else repr(value)  # never repeat a secret
            return (f"{source(name)}: {shown} is not {_kind(default)}, as kafka-python's {name} is "
                    f"(default {default!r}){_yaml_bool_hint(value, isinstance(default, (int, float)))}")
    return None


def _yaml_bool_hint(value: Any, number: bool) -> str:
    """What YAML made of an unquoted yes/no/on/off given for a setting that takes a number (`number`) or text
    (`acks: yes`, `security_protocol: no`); empty for any other value."""
    if not isinstance(value, bool):
        return ""
    return (" (YAML reads an unquoted yes, no, on, off, true or false as a boolean: "
            f"{'write the number' if number else 'quote the text'})")


def stall_problem(text: str, seconds: float, options: Mapping[str, Any]) -> str | None:
    """Why `kafka.stall_restart` (its text, in seconds) is too short for the rebalance timeout plus the session
    timeout of `options`, or None: healthy rebalances would restart the client."""
    rebalance_ms = int(options.get("max_poll_interval_ms", REBALANCE_MS))
    session_ms = int(options.get("session_timeout_ms", SESSION_MS))
    if seconds * 1000 > rebalance_ms + session_ms:
        return None
    total_s = (rebalance_ms + session_ms) / 1000
    return (f"{text} must exceed the rebalance timeout plus the session timeout ({total_s:.0f}s: max_poll_interval_ms"
            f" {rebalance_ms} + session_timeout_ms {session_ms}), or healthy rebalances restart "
            "the client")


def bootstrap_problem(servers: str) -> str | None:
    """Why a bootstrap list cannot name a broker (None: it can), read as kafka-python reads it (cluster.collect_hosts:
    comma-separated HOST[:PORT] entries, an optional SCHEME:// dropped, IPv6 literals in brackets when a port
    follows, 9092 when none does). kafka-python took `host:99999` or `a:9092 b:9092` (one host with a space) as a
    broker it could not reach and `run` retried it for ever; `host:abc` and `[::1` failed with an unexpected
    ValueError naming no setting; a list of commas only (`,`) named no host and failed with an unexpected IndexError."""
    entries = [re.sub(r"^.*://", "", raw.strip()) for raw in servers.split(",")]
    if not any(entries):
        return f"{servers.strip()!r} names no server (HOST:PORT, e.g. kafka:9092)"
    for raw in servers.split(","):
        entry = re.sub(r"^.*://", "", raw.strip())
        if not entry:
            continue  # a stray comma: kafka-python tries an empty host among the others, which still connect
        if re.search(r"\s", entry):
            return f"{raw.strip()!r} holds a space: separate servers with commas (host1:9092,host2:9092)"
        if entry.startswith("["):
            host, close, rest = entry[1:].partition("]")
            if not close or "]" in rest or not host or (rest and not rest.startswith(":")):
                return f"{raw.strip()!r} is not [IPV6]:PORT (an IPv6 address in brackets, then an optional :PORT)"
            port = rest[1:] if rest else None
        elif entry.count(":") > 1:
            if _ipv6(entry) and "%" in entry:  # kafka-python reads a bare scope id as the port: int('1%eth0') fails
                return f"{raw.strip()!r}: write a scoped IPv6 address in brackets ([{entry}]:9092)"
            if _ipv6(entry):
                continue
            return f"{raw.strip()!r} is not HOST:PORT (write an IPv6 address with a port as [::1]:9092)"
        elif ":" in entry:
            host, _, port = entry.rpartition(":")
            if not host:
                return f"{raw.strip()!r} has no host before the port (HOST:PORT, e.g. kafka:9092)"
        else:
            continue
        if port is not None and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
            return f"{raw.strip()!r}: the port {port!r} is not a number from 1 to 65535 (HOST:PORT, e.g. kafka:9092)"
    return None


def _ipv6(text: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(text).version == 6
    except ValueError:
        return False
