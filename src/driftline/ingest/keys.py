"""The co-partitioning rule checked per record: both Kafka topics are keyed by `prediction_id`, so a prediction
and its outcome land in the same partition number and meet in the same process. A record with another key (or
none) may be joined by a process that cannot see its partner's uncommitted batch; `kafka.on_key_mismatch`
dead-letters it (`key_mismatch`, `key_missing`) or accepts it (counted and warned)."""

from __future__ import annotations

KEY_REASONS = ("key_missing", "key_mismatch")


class _NullKey(bytes):
    """The type of NULL_KEY alone (identity tells a null key from an empty one)."""


NULL_KEY: bytes = _NullKey()
"""A Kafka record's null key. An empty key (b"") is a key the producer set, hashed to a partition like any other,
so it is `key_mismatch`; only a null key is `key_missing` (SRE tryout: b"" was dead-lettered `key_missing`, 'record
has no key', sending the operator after a producer that omits the key)."""


def key_problem(key: bytes | None, prediction_id: str) -> str | None:
    """'key_missing' (NULL_KEY), 'key_mismatch' (key ≠ prediction_id, UTF-8; an empty key too) or None. `key`
    None means the source has no keys (files, stdin): nothing to check."""
    if key is None:
        return None
    if type(key) is _NullKey:
        return "key_missing"
    return None if key == prediction_id.encode() else "key_mismatch"


def keys_match(keys: list[bytes], prediction_ids: list[str]) -> bool:
    """Whether `key_problem` is None for every (key, prediction_id) pair, all keys given (none None), in C-level
    passes; False also when a key is empty or null (NULL_KEY equals b"") or a prediction_id cannot be encoded (the
    record-by-record reference then decides)."""
    try:
        return all(keys) and list(map(str.encode, prediction_ids)) == keys
    except (TypeError, UnicodeEncodeError):
        return False


def key_detail(problem: str, key: bytes, prediction_id: str) -> str:
    """Dead-letter detail naming the key found and the one expected."""
    if problem == "key_missing":
        return f"record has no key; expected the prediction_id {prediction_id[:200]!r}"
    return f"key {_shown(key)} is not the prediction_id {prediction_id[:200]!r}"


def _shown(key: bytes) -> str:
    """The key as text, or its bytes when it is not UTF-8 (decoded with replacement characters, b'\\xff\\xfe' and
    b'\\xfe\\xfd' were both '��'); the first 200 bytes (a character cut there is left out)."""
    try:
        key.decode("utf-8")
    except UnicodeDecodeError:
        return f"{key[:200]!r} (not UTF-8)"
    return repr(key[:200].decode("utf-8", "ignore"))
