"""PostgreSQL for tests: a fresh, uniquely named database per test on the machine's server (trust auth).

Server address comes from ``DRIFTLINE_TEST_PG`` (a libpq URL of an existing maintenance database),
default ``postgresql://postgres@127.0.0.1:5432/test``. Unreachable server: skip, or fail when
``DRIFTLINE_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import pytest

from driftline.storage.store import Store
from services import skip_or_fail
from tcp_forwarder import TcpForwarder

ADMIN_URL_ENV = "DRIFTLINE_TEST_PG"
DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"


def admin_url() -> str:
    """libpq URL of the maintenance database used to CREATE/DROP per-test databases."""
    return os.environ.get(ADMIN_URL_ENV, DEFAULT_ADMIN_URL)


def _with_db(url: str, dbname: str, *, driver: str | None = None, port: int | None = None) -> str:
    """Replace the database (and optionally the scheme's driver and the port) in a libpq URL."""
    parts = urlsplit(url)
    scheme = "postgresql+" + driver if driver else "postgresql"
    netloc = parts.netloc
    if port is not None:
        host_part = netloc.rsplit("@", 1)
        hostport = host_part[-1]
        host = hostport.rsplit(":", 1)[0] if ":" in hostport else hostport
        netloc = (host_part[0] + "@" if len(host_part) == 2 else "") + f"{host}:{port}"
    return urlunsplit((scheme, netloc, "/" + dbname, parts.query, parts.fragment))


def pg_reachable(url: str | None = None, timeout_s: int = 3) -> str | None:
    """None when the server answers ``SELECT 1``, else the error text (used to skip/fail)."""
    import psycopg

    try:
        with psycopg.connect(url or admin_url(), connect_timeout=timeout_s, autocommit=True) as conn:
            conn.execute("SELECT 1")
        return None
    except Exception as exc:  # OperationalError, ImportError of the binary, ...
        return f"{type(exc).__name__}: {exc}".strip()


def create_database(name: str) -> None:
    """CREATE DATABASE ``name`` on the test server (autocommit: CREATE DATABASE cannot run in a tx)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url(), connect_timeout=5, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_database(name: str) -> None:
    """DROP DATABASE ``name`` even if a killed test process left sessions open (WITH (FORCE), PG >= 13)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url(), connect_timeout=5, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@dataclass(frozen=True)
class PgDatabase:
    """A per-test database: SQLAlchemy URL, plain libpq URL (for psycopg), and its name."""

    name: str
    url: str  # postgresql+psycopg://postgres@127.0.0.1:5432/<name>
    libpq_url: str  # postgresql://postgres@127.0.0.1:5432/<name>


def _require_pg() -> None:
    error = pg_reachable()
    if error is not None:
        skip_or_fail(f"PostgreSQL unreachable at {admin_url()}: {error}")


@pytest.fixture
def pg_database() -> Iterator[PgDatabase]:
    """A freshly created, uniquely named database, dropped after the test."""
    _require_pg()
    name = f"driftline_t_{uuid.uuid4().hex[:16]}"
    create_database(name)
    try:
        yield PgDatabase(name, _with_db(admin_url(), name, driver="psycopg"), _with_db(admin_url(), name))
    finally:
        drop_database(name)


@pytest.fixture
def pg_url(pg_database: PgDatabase) -> str:
    """SQLAlchemy URL ``postgresql+psycopg://postgres@127.0.0.1:5432/<unique db>`` of a fresh database."""
    return pg_database.url


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[Store]:
    """A migrated Store on a fresh PostgreSQL database, closed after the test."""
    store = Store(pg_url)
    store.migrate()
    yield store
    store.close()


@dataclass(frozen=True)
class ForwardedPg:
    """A per-test database reached through a stoppable TCP forwarder (``url`` goes via the forwarder)."""

    database: PgDatabase
    forwarder: TcpForwarder
    url: str


@pytest.fixture
def pg_behind_forwarder(pg_database: PgDatabase) -> Iterator[ForwardedPg]:
    """Fresh database whose ``url`` passes a forwarder: ``forwarder.stop()`` makes PostgreSQL
    unreachable for this test only (live connections dropped) without stopping the shared cluster."""
    server = urlsplit(admin_url())
    fwd = TcpForwarder(server.hostname or "127.0.0.1", server.port or 5432).start()
    try:
        url = _with_db(admin_url(), pg_database.name, driver="psycopg", port=fwd.port)
        yield ForwardedPg(pg_database, fwd, url)
    finally:
        fwd.stop()
