"""A PostgreSQL URL naming a database or role the server does not have: a typo that no wait or retry mends, so it is
refused at once (NotADatabase) instead of taking the outage path ("database unavailable", `serve` retrying forever).

Recognised by SQLSTATE 3D000 (invalid_catalog_name) or 28000 (invalid_authorization_specification) when the driver
carries one. psycopg 3 carries none for a failed *connection* (libpq keeps only the formatted message, in the
server's `lc_messages` language), so then the server's English words naming exactly the URL's database are taken
as they stand, and any other server-side connection failure is checked in a language-free way: the same
credentials ask a maintenance database (`postgres`, else `template1`) whether `pg_database` lists the name. When
that cannot be asked (no CONNECT there, server down) the failure stays an outage, as before. A missing role is only
recognised by the English message (its 28000 is shared with a pg_hba.conf refusal). A password failure (28P01) is
never refused: it may clear by itself during a credential rotation.
"""

from __future__ import annotations

from sqlalchemy.engine import make_url

from .errors import NotADatabase
from .pgconnect import timeout_args

MISSING_DATABASE = "3D000"
MISSING_ROLE = "28000"
MAINTENANCE_DATABASES = ("postgres", "template1")
PROBE_CONNECT_TIMEOUT_S = 3  # the server has just answered the failed attempt: a probe needs no long wait


def _sqlstate(err: BaseException) -> str | None:
    """The SQLSTATE psycopg attached to the error wrapped by SQLAlchemy, if any."""
    orig = getattr(err, "orig", err)
    return getattr(orig, "sqlstate", None) or getattr(getattr(orig, "diag", None), "sqlstate", None)


def _said(err: BaseException, what: str, name: str) -> bool:
    """Whether the server's FATAL connection message says `what "name" does not exist`."""
    return f'FATAL:  {what} "{name}" does not exist' in str(getattr(err, "orig", err))


def _worth_probing(err: BaseException) -> bool:
    """A psycopg connection failure without SQLSTATE that is not a client-side timeout (the server never answered:
    a probe would wait as long again)."""
    import psycopg

    orig = getattr(err, "orig", err)
    timeout = getattr(psycopg.errors, "ConnectionTimeout", ())
    return isinstance(orig, psycopg.OperationalError) and not isinstance(orig, timeout)


def catalog_lists(url: str, db: str) -> bool | None:
    """Whether the server's pg_database lists `db`, asked through a maintenance database with the URL's
    credentials; None when no maintenance database could be reached (an outage, or no CONNECT privilege)."""
    import psycopg

    parsed = make_url(url)
    for maintenance in MAINTENANCE_DATABASES:
        if maintenance == db:
            continue
        probe = parsed.set(database=maintenance)
        _, params = probe.get_dialect()().create_connect_args(probe)
        params = {**params, **timeout_args(url), "connect_timeout": PROBE_CONNECT_TIMEOUT_S}
        try:
            with psycopg.connect(autocommit=True, **params) as conn:
                return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchone() is not None
        except psycopg.Error:
            continue
    return None


def _missing_database(url: str, db: str, err: BaseException) -> bool:
    """Whether `err` is the server refusing a connection because the URL's database does not exist."""
    state = _sqlstate(err)
    if state is not None or not db:
        return state == MISSING_DATABASE
    return _said(err, "database", db) or (_worth_probing(err) and catalog_lists(url, db) is False)


def refuse_missing(url: str, err: BaseException) -> None:
    """Raise NotADatabase when `err` says the URL's database or role does not exist; otherwise return."""
    if not url.startswith("postgresql"):
        return
    parsed = make_url(url)
    db, user = parsed.database or "", parsed.username or ""
    where = f"{parsed.host or 'localhost'}:{parsed.port or 5432}"
    state = _sqlstate(err)
    if state in (None, MISSING_ROLE) and user and _said(err, "role", user):  # 28000 is also a pg_hba.conf refusal
        raise NotADatabase(f'PostgreSQL role "{user}" does not exist on {where} (a wrong user in --db? create it: '
                           f'CREATE ROLE "{user}" LOGIN)') from None
    if _missing_database(url, db, err):
        raise NotADatabase(f'PostgreSQL database "{db}" does not exist on {where} (a wrong --db name? create it: '
                           f"CREATE DATABASE \"{db}\" ENCODING 'UTF8')") from None
