"""Migration revisions without Alembic: the script heads read from the version files and the revisions a database
stores, so a command can check its schema cheaply and import Alembic only when an upgrade is needed."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from sqlalchemy import Connection, inspect, text

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
def script_heads(versions: Path = VERSIONS) -> frozenset[str]:
    """The head revisions of the migration scripts: revisions no other script names as its down_revision.
    Cached: the files are part of the installed package."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in sorted(versions.glob("*.py")):
        values = _assigned(path.read_text(encoding="utf-8"), ("revision", "down_revision"))
        if "revision" not in values:
            continue
        revisions.add(str(values["revision"]))
        down = values.get("down_revision")
        parents.update([down] if isinstance(down, str) else list(down or ()))  # type: ignore[call-overload]
    return frozenset(revisions - parents)


def stored_revisions(conn: Connection) -> frozenset[str] | None:
    """The revisions recorded in the database, or None when it has no version table (never migrated)."""
    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    return frozenset(row[0] for row in conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")))
