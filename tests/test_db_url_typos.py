"""A PostgreSQL URL with a typo libpq would refuse is refused at start naming it (exit 2), before any connection:
`?sslmod=require` and `?connect_timeout=abc` ended "unexpected ProgrammingError" (exit 1), `:abc` an "unexpected
ValueError", and `:99999` or `?sslmode=bogus` "database unavailable" (exit 3; `serve` and `run` retry it for ever)."""

from __future__ import annotations

import pytest

from driftline.cli import main

PG = "postgresql+psycopg://postgres@127.0.0.1"


@pytest.mark.parametrize(("url", "line"), [
    (f"{PG}/test?sslmod=require", "error: --db: ?sslmod=: not a PostgreSQL connection setting (did you mean "
                                  "?sslmode=?); see https://www.postgresql.org/docs/current/libpq-connect.html"
                                  "#LIBPQ-PARAMKEYWORDS"),
    (f"{PG}/test?sslmode=bogus", "error: --db: ?sslmode=bogus: not one of disable, allow, prefer, require, "
                                 "verify-ca, verify-full"),
    (f"{PG}/test?connect_timeout=abc", "error: --db: ?connect_timeout=abc: not a whole number"),
    (f"{PG}:99999/test", "error: --db: port 99999 is outside 1..65535"),
    (f"{PG}:abc/test", "error: --db: cannot parse the URL as a database URL (its port is not a number); use "
                       "sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"),
])
def test_a_postgres_url_typo_is_refused_at_start(capsys, url: str, line: str) -> None:  # type: ignore[no-untyped-def]
    assert main(["--db", url, "metrics"]) == 2
    assert capsys.readouterr().err.replace("\n", "").split() == line.split()


def test_settings_libpq_has_pass_the_check() -> None:
    from driftline.storage.urls import check_url

    check_url(f"{PG}:5432/test?sslmode=verify-full&connect_timeout=5&application_name=x&keepalives_idle=30")
    check_url("postgres://u@h/db")
