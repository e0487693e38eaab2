"""A PostgreSQL URL naming a database or role the server does not have: a typo that no wait or retry mends, so it is
refused at once (NotADatabase) instead of taking the outage path ("database unavailable", `serve` retrying forever).

Recognised by SQLSTATE 3D000 (invalid_catalog_name) or 28000 (invalid_authorization_specification) when the driver
carries one. psycopg 3 carries none for a failed *connection* (libpq keeps only the formatted message), so then the
server's own words for that error are matched, naming exactly the URL's database or user: a server answering in
another language (`lc_messages`) is still retried, as before. A password failure (28P01) is never refused: it may
clear by itself during a credential rotation.
"""

from __future__ import annotations

from sqlalchemy.engine import make_url

from .errors import NotADatabase

MISSING_DATABASE = "3D000"
MISSING_ROLE = "28000"


def _sqlstate(err: BaseException) -> str | None:
    """The SQLSTATE psycopg attached to the error wrapped by SQLAlchemy, if any."""
    orig = getattr(err, "orig", err)
    return getattr(orig, "sqlstate", None) or getattr(getattr(orig, "diag", None), "sqlstate", None)


def _said(err: BaseException, what: str, name: str) -> bool:
    """Whether the server's FATAL connection message says `what "name" does not exist`."""
    return f'FATAL:  {what} "{name}" does not exist' in str(getattr(err, "orig", err))


def refuse_missing(url: str, err: BaseException) -> None:
    """Raise NotADatabase when `err` says the URL's database or role does not exist; otherwise return."""
    if not url.startswith("postgresql"):
        return
    parsed = make_url(url)
    db, user = parsed.database or "", parsed.username or ""
    where = f"{parsed.host or 'localhost'}:{parsed.port or 5432}"
    state = _sqlstate(err)
    if state == MISSING_DATABASE or (state is None and db and _said(err, "database", db)):
        raise NotADatabase(f'PostgreSQL database "{db}" does not exist on {where} (a wrong --db name? create it: '
                           f"CREATE DATABASE \"{db}\" ENCODING 'UTF8')") from None
    if state in (None, MISSING_ROLE) and user and _said(err, "role", user):  # 28000 is also a pg_hba.conf refusal
        raise NotADatabase(f'PostgreSQL role "{user}" does not exist on {where} (a wrong user in --db? create it: '
                           f'CREATE ROLE "{user}" LOGIN)') from None
