"""The co-partitioning rule checked per record: both Kafka topics are keyed by `prediction_id`, so a prediction
and its outcome land in the same partition number and meet in the same process. A record with another key (or
none) may be joined by a process that cannot see its partner's uncommitted batch; `kafka.on_key_mismatch`
dead-letters it (`key_mismatch`, `key_missing`) or accepts it (counted and warned)."""

from __future__ import annotations

KEY_REASONS = ("key_missing", "key_mismatch")


def key_problem(key: bytes | None, prediction_id: str) -> str | None:
    """'key_missing' (null or empty key), 'key_mismatch' (key ≠ prediction_id, UTF-8) or None. `key` None means
    the source has no keys (files, stdin): nothing to check."""
    if key is None:
        return None
    if not key:
        return "key_missing"
    return None if key == prediction_id.encode() else "key_mismatch"


def keys_match(keys: list[bytes], prediction_ids: list[str]) -> bool:
    """Whether `key_problem` is None for every (key, prediction_id) pair, all keys given (none None), in C-level
    passes; False also when a prediction_id cannot be encoded (the record-by-record reference then decides)."""
    try:
        return all(keys) and list(map(str.encode, prediction_ids)) == keys
    except (TypeError, UnicodeEncodeError):
        return False


def key_detail(problem: str, key: bytes, prediction_id: str) -> str:
    """Dead-letter detail naming the key found and the one expected."""
    if problem == "key_missing":
        return f"record has no key; expected the prediction_id {prediction_id[:200]!r}"
    return f"key {key[:200].decode('utf-8', 'replace')!r} is not the prediction_id {prediction_id[:200]!r}"
