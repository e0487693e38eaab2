"""What every command receives: the validated config, the database URL, a console and a clock."""

from __future__ import annotations

import argparse
import re
import os
import time
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from rich.console import Console

from .config import Config, ConfigError
from .durations import MAX_WINDOW_DAYS, MAX_WINDOW_S, parse_duration
from .core.events import MAX_EPOCH, parse_time_text
from .decimal_comma import comma_hint
from .storage.calls import StallWatch
from .storage.store import DEFAULT_URL, Store
from .storage.urls import UnusableURL, check_url, sqlite_file, sqlite_relative

LATEST_AT = 253370764800.0
"""9999-01-01T00:00:00Z: the latest window end a query accepts (a window end is rounded up to a bucket
boundary and must stay a calendar date; events after 9999-12-31 are rejected anyway)."""


@dataclass
class Context:
    """Shared command state; `store()` opens (and migrates) the database on first use."""

    config: Config
    db_url: str
    console: Console
    err: Console
    clock: Callable[[], float] = time.time
    model_named: bool = False
    """Whether the config file itself names `model:` (else config.model is only the built-in default)."""
    db_source: str = "--db"
    """Where db_url came from: '--db', 'DRIFTLINE_DB', 'config `database`' or 'default' (resolve_db), named
    when the database is missing."""
    creates: bool = True
    """Whether the command may create a SQLite file that does not exist (writers); readers refuse it, on first use
    of the store, so option errors found before are reported first."""
    _store: Store | None = field(default=None, repr=False)
    _stall_watch: StallWatch | None = field(default=None, repr=False)

    def store(self) -> Store:
        """The database, opened and migrated on first use, with the stall watch of run/serve: a call unanswered for
        longer than kafka.database_stall is a warning on stderr, and its end another (SRE tryout: `replay` against a
        stopped proxy printed nothing until the database answered)."""
        if self._store is None:
            if not self.creates:
                require_existing(self.db_url, self.db_source)
            self._store = Store(self.db_url, clock=self.clock, sqlite_cache_mb=self.config.storage.sqlite_cache_mb)
            self._stall_watch = StallWatch(self._store.calls, parse_duration(self.config.kafka.database_stall))
            self._stall_watch.start()  # before migrating: its first read can stall too
            self._store.migrate()
        return self._store

    def close(self) -> None:
        if self._stall_watch is not None:
            self._stall_watch.stop()
        if self._store is not None:
            self._store.close()


def require_existing(db_url: str, source: str = "--db") -> None:
    """ConfigError when `db_url` names a SQLite file that does not exist (a read-only command would create an empty
    one and report "no predictions stored yet"), saying where the URL came from (`source`, see resolve_db) and
    which commands create it; PostgreSQL and in-memory databases are not checked."""
    path = sqlite_file(db_url)
    if path is not None and not os.path.exists(path):
        raise ConfigError(f"no database at {path} ({url_origin(db_url, source)}); commands that write — replay, "
                          "run, demo, serve — create it")


def url_origin(db_url: str, source: str) -> str:
    """'--db sqlite:///x.db, relative to /cwd', 'the default --db sqlite:///driftline.db, relative to /cwd', …:
    which setting gave the URL, and the folder a relative SQLite path was resolved against."""
    said = {"default": f"the default --db {db_url}", "DRIFTLINE_DB": f"env DRIFTLINE_DB={db_url}",
            "config `database`": f"config `database: {db_url}`"}.get(source, f"{source} {db_url}")
    return said + (f", relative to {os.getcwd()}" if sqlite_relative(db_url) else "")


def resolve_db(flag: str | None, config: Config) -> tuple[str, str]:
    """The database URL and where it came from: --db, then DRIFTLINE_DB, then the config's `database`, then
    sqlite:///driftline.db ('default'); ConfigError naming where the URL came from when driftline cannot use it."""
    for source, url in (("--db", flag), ("DRIFTLINE_DB", os.environ.get("DRIFTLINE_DB")),
                        ("config `database`", config.database)):
        if source == "--db" and url is not None and not url.strip():  # (a variable set empty is unset; the
            # config's `database: ""` is refused at load) tryout: `--db "$DB_URL"`, unset, wrote ./driftline.db
            raise ConfigError(f"{source}: empty: give a database URL (sqlite:///PATH or "
                              "postgresql+psycopg://USER@HOST/DB), or leave it out for the default "
                              f"{DEFAULT_URL}")
        if url:
            try:
                check_url(url)
            except UnusableURL as err:
                raise ConfigError(f"{source}: {err}") from err
            return url, source
    return DEFAULT_URL, "default"


def parse_at(text: str | None, option: str = "--at") -> float | None:
    """--at (or another time option, named in errors) under the one timestamp rule of events (TIME_RULE)."""
    if text is None:
        return None
    try:
        value = parse_time_text(text)
    except (ValueError, OverflowError) as err:
        if "outside" in str(err) or isinstance(err, OverflowError):
            hint = "; it looks like epoch milliseconds: give seconds or RFC 3339" if "milliseconds" in str(err) else ""
            raise ConfigError(f"{option}: {text!r} is outside 1970-01-01..9999-12-31{hint}") from None
        raise ConfigError(f"{option}: {err}") from None
    if not 0.0 <= value <= MAX_EPOCH:  # also NaN: events outside 1970..9999 are rejected, so are such times
        raise ConfigError(f"{option}: {text!r} is outside 1970-01-01..9999-12-31")
    if value > LATEST_AT:
        raise ConfigError(f"{option}: {text!r} is after 9999-01-01, the latest time a window may end")
    return value


def parse_window(text: str | None, config: Config) -> float:
    """--window as a duration ('7d'), defaulting to the config's window."""
    if text is None:
        return config.window_s
    try:
        seconds = parse_duration(text)
    except ValueError as err:
        raise ConfigError(f"--window: {err}") from None
    if seconds > MAX_WINDOW_S:  # first: a huge float is no longer a whole number of anything
        raise ConfigError(f"--window: {text} is longer than {MAX_WINDOW_DAYS}d (100 years)")
    if seconds % config.bucket_s:
        raise ConfigError(f"--window: {text} is not a whole number of buckets ({config.bucket} each): windows "
                          "are sums of buckets")
    return seconds


def number_type(kind: Callable[[str], Any], ok: Callable[[Any], bool], why: str,
                what: str = "a number") -> Callable[[str], Any]:
    """An argparse type: `kind(text)` accepted when `ok`, else an error saying `why` ({text} is the input)."""
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}{comma_hint(text)}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(why.format(text=text))
        return value
    return parse


MAX_COUNT = 2**31 - 1
"""Largest whole-number option (a count, size, limit, id or seed): larger ones overflowed the database's integers
(second tryout: `dead-letters --limit 99999999999999999999` ended in an unexpected OverflowError / DataError)."""


_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
"""What a whole-number option accepts as written: ASCII digits, an optional fraction and exponent."""


def whole(lo: int, hi: int = MAX_COUNT, why: str | None = None, what: str = "a number") -> Callable[[str], int]:
    """The argparse type of every whole-number option: lo..hi written in digits or in exponent notation when
    that is a whole number (`--per-day 1e3` = 1000, as `--at 1e9` is a time; '2.5' and '1e-3' are refused); out
    of range: an error saying `why` ({text} is the input), by default 'must be lo to hi, got {text}'."""
    message = why or f"must be {lo:,} to {hi:,}, got {{text}}"

    def parse(text: str) -> int:
        shown = text if len(text) <= 40 else f"{text[:20]}…{text[-8:]} ({len(text):,} characters)"
        if not _PLAIN_NUMBER.fullmatch(text.strip()):  # Decimal also takes '1_000' and non-ASCII digits ('５')
            raise argparse.ArgumentTypeError(f"{shown!r} is not {what}{comma_hint(text)}")
        try:
            value = Decimal(text)  # exact: no float rounding of 1e20, and the range is checked before int()
        except InvalidOperation:
            raise argparse.ArgumentTypeError(f"{shown!r} is not {what}") from None
        if not value.is_finite():
            raise argparse.ArgumentTypeError(f"{shown!r} is not {what}")
        if value != value.to_integral_value():
            raise argparse.ArgumentTypeError(f"{shown!r} is not a whole number")
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(message.format(text=shown))
        return int(value)
    return parse


def positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """argparse type of a number greater than 0 (of `kind`; a whole number at most MAX_COUNT, see `whole`)."""
    if kind is int:
        return whole(1)
    return number_type(kind, lambda v: v > 0, "must be greater than 0, got {text}")


port_number = whole(0, 65535, "port {text} is outside 0..65535", "a port number")
"""argparse type of a TCP port: 0 (any free port) to 65535."""
seed_number = whole(0)
"""argparse type of a random seed: 0 to MAX_COUNT (a negative one ended in an unexpected ValueError)."""
fraction = number_type(float, lambda v: 0.0 < v < 1.0, "must be between 0 and 1 (exclusive), got {text}")
"""argparse type of a proportion strictly between 0 and 1 (e.g. a prevalence)."""
