"""Shared pytest fixtures: the real tansu Kafka broker and per-test PostgreSQL databases.

Fixtures (see kafka_fixtures.py / pg_fixtures.py):
- ``kafka_bootstrap`` (session): "127.0.0.1:PORT" of a tansu broker; use ``unique_name()`` for topics/groups.
- ``tansu_broker`` (session): the broker object behind ``kafka_bootstrap`` (log tail, ports).
- ``kafka_behind_forwarder``: a private tansu advertising a stoppable TCP forwarder (broker-outage tests).
- ``pg_url``: SQLAlchemy URL of a fresh database; ``pg_database`` also gives its name and libpq URL.
- ``pg_behind_forwarder``: fresh database reached through a stoppable forwarder (database-outage tests).
- ``migrated_sqlite`` (session): a migrated SQLite file to copy with ``sqlite_fixtures.migrated_copy``.
Missing services skip the test, or fail it when ``DRIFTLINE_REQUIRE_SERVICES=1`` (as .ci/run sets).
"""

from __future__ import annotations

import os
import sys
import warnings

# The fixture modules live next to this file; make them importable however pytest was started.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# kafka-python 3.0.x loads its protocol schemas with the deprecated importlib.resources API at import
# time (~200 DeprecationWarnings per session); import it once here with exactly those silenced.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r"(read_text|open_text) is deprecated", category=DeprecationWarning)
    import kafka  # noqa: E402,F401

from kafka_fixtures import (  # noqa: E402
    kafka_behind_forwarder,
    kafka_bootstrap,
    tansu_broker,
)
from pg_fixtures import pg_behind_forwarder, pg_database, pg_store, pg_url  # noqa: E402
from sqlite_fixtures import join_schema, migrated_sqlite  # noqa: E402

__all__ = [
    "kafka_behind_forwarder",
    "join_schema",
    "migrated_sqlite",
    "kafka_bootstrap",
    "pg_behind_forwarder",
    "pg_database",
    "pg_store",
    "pg_url",
    "tansu_broker",
]


def pytest_collection_modifyitems(items: list) -> None:  # type: ignore[type-arg]
    """Modules holding a test marked `slow` first, each module's tests in their own order: under pytest-xdist's
    `--dist loadscope` (the README's command) a worker takes a whole module at a time, so the long end-to-end and
    simulation modules start at once, side by side, instead of forming the tail of the run; a module's tests keep
    the order their module-scoped fixtures expect (one test sets a reference the next reads)."""
    slow = {item.module for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.module not in slow)
