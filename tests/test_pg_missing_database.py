"""A PostgreSQL URL naming a database (or role) the server does not have is a typo, not an outage (user tryout:
`metrics` said "database unavailable: … database "no_such_db" does not exist" with exit 3, and `serve`/`run` retried
it forever): one `error:` line saying to create it, exit 2, no retry loop. A password failure stays retried."""

from __future__ import annotations

import subprocess
import sys
import uuid
from urllib.parse import urlsplit

import psycopg
import pytest
from sqlalchemy.exc import OperationalError

from driftline.storage.errors import NotADatabase
from driftline.storage.pg_missing import refuse_missing
from pg_fixtures import _require_pg, _with_db, admin_url
from pg_foreign import german_pg  # noqa: F401  (a fixture: only this file needs a German server)


def _missing_url() -> str:
    _require_pg()
    return _with_db(admin_url(), f"driftline_absent_{uuid.uuid4().hex[:12]}", driver="psycopg")


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "driftline.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_read_command_on_missing_pg_database_is_one_error_line_exit_2():
    url = _missing_url()
    name = url.rsplit("/", 1)[1]
    r = _cli("--db", url, "metrics")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: ") and f'"{name}" does not exist' in lines[0]
    assert f"CREATE DATABASE \"{name}\" ENCODING 'UTF8'" in lines[0]


def test_serve_on_missing_pg_database_exits_2_instead_of_retrying():
    r = _cli("--db", _missing_url(), "serve", "--port", "0", timeout=90)
    assert r.returncode == 2, r.stderr
    assert "retrying" not in r.stderr and "does not exist" in r.stderr


def test_run_on_missing_pg_database_prints_the_error_line_alone():
    """SRE tryout: `run` printed its two start banner lines (Kafka settings, exporter URL) above the error; the
    banner now follows the first migration attempt, which is what finds the database missing."""
    url = _missing_url()
    r = _cli("--db", url, "run", "--kafka", "127.0.0.1:1", "--port", "0", timeout=90)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "does not exist" in lines[0], r.stderr


def test_the_run_banner_follows_the_first_migration_attempt_whatever_its_outcome():
    """Announced once after the first attempt, also when that one found the database down (the exporter URL is
    what an operator needs while waiting), and never when the database does not exist."""
    import threading

    from driftline.kafka.health import Backoff
    from driftline.service.live import migrate_with_retry
    from driftline.storage.errors import StoreUnavailable

    class Flaky:
        def __init__(self, *outcomes: Exception | None) -> None:
            self.outcomes, self.events = list(outcomes), []

        def migrate(self) -> None:
            self.events.append("migrate")
            outcome = self.outcomes.pop(0)
            if outcome is not None:
                raise outcome

    no_wait = Backoff(0.0, 0.0)
    for outcomes, expected in (((None,), ["migrate", "banner"]),
                               ((StoreUnavailable("down"), StoreUnavailable("down"), None),
                                ["migrate", "banner", "migrate", "migrate"])):
        store = Flaky(*outcomes)
        assert migrate_with_retry(store, threading.Event(), no_wait,  # type: ignore[arg-type]
                                  on_first=lambda: store.events.append("banner"))
        assert store.events == expected
    store = Flaky(NotADatabase('PostgreSQL database "x" does not exist'))
    with pytest.raises(NotADatabase):
        migrate_with_retry(store, threading.Event(), no_wait,  # type: ignore[arg-type]
                           on_first=lambda: store.events.append("banner"))
    assert store.events == ["migrate"]


def test_missing_role_is_refused_too():
    _require_pg()
    user = f"absent_{uuid.uuid4().hex[:8]}"
    host = urlsplit(admin_url()).netloc.rsplit("@", 1)[-1]
    r = _cli("--db", f"postgresql+psycopg://{user}@{host}/test", "metrics")
    assert r.returncode == 2 and f'role "{user}" does not exist' in r.stderr, r.stderr


def _wrapped(orig: Exception) -> OperationalError:
    return OperationalError("connect", {}, orig)


def test_sqlstate_3d000_is_refused_whatever_the_message_language():
    err = psycopg.errors.InvalidCatalogName("FATAL:  la base de données « x » n'existe pas")
    with pytest.raises(NotADatabase, match="CREATE DATABASE"):
        refuse_missing("postgresql+psycopg://u@h:5432/x", _wrapped(err))


@pytest.mark.parametrize("message", [
    'connection failed: FATAL:  password authentication failed for user "u"',
    "connection failed: Connection refused",
    'connection failed: FATAL:  database "other" does not exist',  # not the URL's database: never guessed
])
def test_other_connection_failures_stay_an_outage(message):
    refuse_missing("postgresql+psycopg://u@h:5432/x", _wrapped(psycopg.OperationalError(message)))


def test_a_database_dropped_under_a_running_process_is_an_outage_not_a_typo(pg_database):
    """Refused only before the store ever reached its database: one dropped under a running `run`/`serve` (an
    in-place restore drops and recreates it) is waited for like any outage, not an exit."""
    from driftline.storage.errors import StoreUnavailable
    from driftline.storage.store import Store
    from pg_fixtures import create_database, drop_database

    store = Store(pg_database.url)
    try:
        store.migrate()
        assert store.models() == []
        store.engine.dispose()
        drop_database(pg_database.name)
        with pytest.raises(StoreUnavailable):
            store.models()
        create_database(pg_database.name)  # restored: the same store carries on
        store.migrate()
        assert store.models() == []
    finally:
        store.close()


def test_missing_database_on_a_server_speaking_german_is_refused_too(german_pg):
    """Finding: only the English message was recognised (psycopg carries no SQLSTATE for a failed connection), so a
    server with German `lc_messages` ("Datenbank »x« existiert nicht") had `metrics` exit 3 and `serve` retry
    forever. Now the same credentials ask the server's catalogue, whatever language it speaks."""
    name = f"driftline_absent_{uuid.uuid4().hex[:12]}"
    url = _with_db(german_pg, name, driver="psycopg")
    with pytest.raises(psycopg.OperationalError) as caught:
        psycopg.connect(_with_db(german_pg, name), connect_timeout=5)
    if "existiert nicht" not in str(caught.value):
        pytest.skip(f"the private server does not speak German here: {caught.value}")
    r = _cli("--db", url, "metrics")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (f'error: PostgreSQL database "{name}" does not exist on 127.0.0.1:'
                                f"{urlsplit(url).port} (a wrong --db name? create it: CREATE DATABASE \"{name}\""
                                " ENCODING 'UTF8')"), r.stderr
    r = _cli("--db", url, "serve", "--port", "0", timeout=90)
    assert r.returncode == 2 and "retrying" not in r.stderr, r.stderr


def test_a_foreign_message_is_checked_against_the_real_catalogue():
    """The language-free check on the shared server: a connection failure in words it cannot read is refused only
    when pg_database really lacks the URL's database; for one that exists (here `too many connections`, say) it
    stays an outage."""
    url = _missing_url()
    german = 'connection failed: FATAL:  Datenbank »{}« existiert nicht'
    with pytest.raises(NotADatabase, match="CREATE DATABASE"):
        refuse_missing(url, _wrapped(psycopg.OperationalError(german.format(url.rsplit("/", 1)[1]))))
    existing = _with_db(admin_url(), urlsplit(admin_url()).path.lstrip("/"), driver="psycopg")
    refuse_missing(existing, _wrapped(psycopg.OperationalError("connection failed: FATAL:  tut uns leid, schon zu "
                                                               "viele Verbindungen")))
