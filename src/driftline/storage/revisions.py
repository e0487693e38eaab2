"""Migration revisions without Alembic: the script heads read from the version files and the revisions a database
stores, so a command can check its schema cheaply and import Alembic only when an upgrade is needed."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from sqlalchemy import Connection, inspect, text
from sqlalchemy.exc import DBAPIError, DataError, IntegrityError, OperationalError, ProgrammingError

from .errors import MigrationFailed, SchemaTooNew

VERSIONS = Path(__file__).parent / "migrations" / "versions"
VERSION_TABLE = "alembic_version"


def _assigned(source: str, names: tuple[str, ...]) -> dict[str, object]:
    """Module-level `name = <literal>` assignments of a migration script (parsed, never executed)."""
    found: dict[str, object] = {}
    for node in ast.parse(source).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id in names and node.value is not None:
            found[target.id] = ast.literal_eval(node.value)
    return found


@cache
def _scripts(versions: Path) -> tuple[frozenset[str], frozenset[str]]:
    """(every revision, every down_revision) of the migration scripts. Cached: the files are part of the package."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in sorted(versions.glob("*.py")):
        values = _assigned(path.read_text(encoding="utf-8"), ("revision", "down_revision"))
        if "revision" not in values:
            continue
        revisions.add(str(values["revision"]))
        down = values.get("down_revision")
        parents.update([down] if isinstance(down, str) else list(down or ()))  # type: ignore[call-overload]
    return frozenset(revisions), frozenset(parents)


def script_heads(versions: Path = VERSIONS) -> frozenset[str]:
    """The head revisions of the migration scripts: revisions no other script names as its down_revision."""
    revisions, parents = _scripts(versions)
    return revisions - parents


def unknown_revisions(stored: frozenset[str] | None, versions: Path = VERSIONS) -> list[str]:
    """Stored revisions no migration script of this version defines (sorted): the database was migrated by a newer
    driftline, and this one must neither migrate nor use it."""
    return sorted((stored or frozenset()) - _scripts(versions)[0])


def stored_revisions(conn: Connection) -> frozenset[str] | None:
    """The revisions recorded in the database, or None when it has no version table (never migrated)."""
    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    return frozenset(row[0] for row in conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")))


def refuse_newer_schema(stored: frozenset[str] | None, versions: Path = VERSIONS) -> None:
    """Raise SchemaTooNew, naming the revisions on both sides, when the database records a revision this version's
    scripts do not define (migrated by a newer driftline): it is neither migrated nor read, so nothing is written."""
    unknown = unknown_revisions(stored, versions)
    if not unknown:
        return
    from .. import __version__

    raise SchemaTooNew(
        f"the database schema is newer than this driftline ({__version__}): it records revision(s) "
        f"{', '.join(unknown)}, which this version does not know (its newest revisions: "
        f"{', '.join(sorted(script_heads(versions)))}); a newer driftline migrated it. Nothing was read or written. "
        "Run that newer version against it; to go back, restore the backup taken before the upgrade (migrations are "
        "never reversed)")


SQLITE_OUTAGES = ("database is locked", "database is busy", "disk i/o error", "database or disk is full",
                  "unable to open database file", "readonly database")
"""SQLite errors a wait mends (a lock, the disk, a mount): SQLite raises OperationalError for these and for a
statement the schema refuses ('duplicate column name') alike."""


def refused_statement(dialect: str, err: DBAPIError) -> bool:
    """Whether a migration statement failed because the database refused it, not because it was away or busy:
    PostgreSQL says so by class (ProgrammingError, IntegrityError, DataError; OperationalError is an outage),
    SQLite only in the message."""
    if err.connection_invalidated:
        return False
    if isinstance(err, (ProgrammingError, IntegrityError, DataError)):
        return True
    if dialect == "sqlite" and isinstance(err, OperationalError):
        msg = str(err.orig).lower()
        return not any(outage in msg for outage in SQLITE_OUTAGES)
    return False


def migrated_note(before: frozenset[str] | None, after: frozenset[str] | None) -> str | None:
    """The one line saying which revisions a migration applied to a database an older driftline had written, so the
    operator sees that it happened (and that older builds cannot open it now); None for a new database or none."""
    applied = sorted((after or frozenset()) - (before or frozenset()))
    if not before or not applied:
        return None
    return (f"migrated the database schema: applied {', '.join(applied)} (recorded before: "
            f"{', '.join(sorted(before))}); driftline builds older than these revisions now refuse this database "
            "(README: Upgrading)")


def migration_failed(stored: frozenset[str] | None, err: DBAPIError) -> MigrationFailed:
    """The one-line error for a refused migration statement, naming the revisions on both sides and what to do."""
    pending = ", ".join(sorted(script_heads() - (stored or frozenset())))
    before = ", ".join(sorted(stored)) if stored else "none"
    return MigrationFailed(
        f"migrating the database schema failed (applying {pending}; recorded before: {before}): the database "
        f"refused a statement ({str(err.orig).splitlines()[0] if err.orig else err}). Nothing was changed (the "
        "migration is one transaction), and starting again fails the same way: the schema differs from what its "
        "recorded revision means (changed by hand, or a partial restore). Restore the backup taken before the "
        "upgrade (README: Upgrading), or repair the schema and start again")
