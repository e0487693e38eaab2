"""Database URLs checked before use: a backend or driver driftline cannot use is one clear line, not a traceback."""

from __future__ import annotations

import os
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError


SUPPORTED = "use sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"


class UnusableURL(ValueError):
    """A database URL driftline cannot open: unparseable, another backend, or a driver that is not there."""


def normalise_url(url: str) -> str:
    """Accept plain postgresql:// URLs and use psycopg 3 for them."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def check_url(url: str) -> None:
    """Raise UnusableURL saying why `url` cannot hold driftline's store (the password is never repeated)."""
    try:
        u = make_url(normalise_url(url))
    except (ArgumentError, ValueError) as err:  # ValueError: a port that is no number (`:abc`), was "unexpected"
        shown = repr(url) if "@" not in url else "the URL"
        why = " (its port is not a number)" if isinstance(err, ValueError) else ""
        raise UnusableURL(f"cannot parse {shown} as a database URL{why}; {SUPPORTED}") from None
    backend = u.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise UnusableURL(f"unsupported database {backend!r} ({u.drivername}); {SUPPORTED}")
    try:
        dialect = u.get_dialect()
    except NoSuchModuleError as err:
        raise UnusableURL(f"unknown driver {u.drivername!r}; {SUPPORTED}") from err
    try:
        dialect.import_dbapi()
    except ImportError as err:
        raise UnusableURL(f"driver {u.drivername!r} is not installed ({err}); {SUPPORTED}") from err
    problem = postgres_problem(u) if backend == "postgresql" else None
    if problem:  # a typo no retry mends: it was an unexpected ProgrammingError, or `database unavailable` for ever
        raise UnusableURL(problem)
    path = u.database or ""
    if backend == "sqlite" and (path in ("", ":memory:") or path.startswith("file::memory:")
                                or u.query.get("mode") == "memory" or "mode=memory" in path):
        raise UnusableURL(f"{url!r} is an in-memory SQLite database, which lives only as long as one command: what "
                          "a replay stores there is gone when it ends and a query finds nothing; use "
                          "sqlite:///PATH (a file)")
    if backend == "sqlite" and path and not path.startswith("file:"):
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):  # never transient: `run` and `serve` would wait for it for ever
            raise UnusableURL(f"the folder of the SQLite file, {folder}, does not exist; create it or use another path")


SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
WHOLE_SETTINGS = ("connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
                  "tcp_user_timeout")
"""libpq settings whose value is a whole number (a word there failed every connection attempt)."""


def postgres_problem(u: Any) -> str | None:
    """What libpq would refuse in a PostgreSQL URL before connecting, said once (`?sslmod=require`: "unexpected
    ProgrammingError: invalid connection option"; `:99999` or `?sslmode=bogus`: `database unavailable` for ever,
    as if the server were away): a port outside 1..65535, a query setting libpq does not have (with the closest),
    an sslmode it does not know, a word where a whole number is wanted. None when none of these."""
    import difflib

    from psycopg import ProgrammingError, pq
    from psycopg.conninfo import make_conninfo

    if u.port is not None and not 1 <= u.port <= 65535:
        return f"port {u.port} is outside 1..65535"
    for key, value in u.query.items():
        text = value[-1] if isinstance(value, tuple) else value
        try:
            make_conninfo("", **{key: text})
        except ProgrammingError:
            known = [o.keyword.decode() for o in pq.Conninfo.get_defaults()]
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            return (f"?{key}=: not a PostgreSQL connection setting" + (f" (did you mean ?{close[0]}=?)" if close else "")
                    + "; see https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-PARAMKEYWORDS")
        if key == "sslmode" and text not in SSLMODES:
            return f"?sslmode={text}: not one of {', '.join(SSLMODES)}"
        if key in WHOLE_SETTINGS and not text.strip().lstrip("-").isdigit():
            return f"?{key}={text}: not a whole number"
    return None


def sqlite_file(url: str) -> str | None:
    """The absolute path of the SQLite file a URL names; None for PostgreSQL, an in-memory database or a SQLite
    `file:` URI (whose mode decides itself whether it may create the file)."""
    try:
        u = make_url(normalise_url(url))
    except (ArgumentError, ValueError):  # ValueError: a port that is no number (`:abc`), an unexpected ValueError
        return None
    path = u.database or ""
    if u.get_backend_name() != "sqlite" or not path or path == ":memory:" or path.startswith("file:"):
        return None
    return os.path.abspath(path)


def sqlite_relative(url: str) -> bool:
    """Whether a URL names a SQLite file by a relative path (resolved against the current directory)."""
    path = sqlite_file(url)
    return path is not None and not os.path.isabs(make_url(normalise_url(url)).database or "")
