"""Join tables without a rowid on SQLite: each pending prediction and outcome stored once, in its primary key.

A SQLite table with a text primary key keeps every row twice: in the rowid table and again (id, model, variant)
in the primary key's index. `WITHOUT ROWID` clusters the rows on the primary key, so a join-row write updates one
b-tree less and a pending prediction takes fewer bytes (the id is no longer stored twice). PostgreSQL is left as it
is (its heap has no rowid to drop). Existing rows are copied over unchanged: an upgrade loses nothing.

The table is rebuilt from its own stored DDL, so it keeps whatever columns it has; 0002 (predictions.slice_values),
a sibling branch that may run before or after this one, adds its column with SQLite's ALTER TABLE ADD COLUMN, which
keeps `WITHOUT ROWID` (no `depends_on`: Alembic would then store this revision in place of 0002, and the store's
cheap schema check compares the stored revisions with the scripts' heads).

Revision ID: 0010_joinpack
Revises: 0001
"""
import re

from alembic import op

revision = "0010_joinpack"
down_revision = "0001"
branch_labels = None
depends_on = None

TABLES = {"predictions": "CREATE INDEX ix_predictions_shard_ts ON predictions (shard, ts)",
          "outcomes": "CREATE INDEX ix_outcomes_shard_ts ON outcomes (shard, ts)"}


def _rebuild(table: str, index_sql: str, without_rowid: bool) -> None:
    """Recreate `table` from its own stored DDL with or without `WITHOUT ROWID`, copying every row."""
    bind = op.get_bind()
    ddl = bind.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                               (table,)).scalar_one()
    body = re.sub(r"\)\s*(WITHOUT\s+ROWID\s*)?$", ")", ddl.strip(), flags=re.IGNORECASE)
    if bool(re.search(r"WITHOUT\s+ROWID\s*$", ddl.strip(), re.IGNORECASE)) == without_rowid:
        return
    body = body[body.index("("):]
    bind.exec_driver_sql(f"CREATE TABLE {table}_joinpack {body}" + (" WITHOUT ROWID" if without_rowid else ""))
    bind.exec_driver_sql(f"INSERT INTO {table}_joinpack SELECT * FROM {table}")
    bind.exec_driver_sql(f"DROP TABLE {table}")
    bind.exec_driver_sql(f"ALTER TABLE {table}_joinpack RENAME TO {table}")
    bind.exec_driver_sql(index_sql)


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table, index_sql in TABLES.items():
        _rebuild(table, index_sql, without_rowid=True)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for table, index_sql in TABLES.items():
        _rebuild(table, index_sql, without_rowid=False)


