"""Which database this is: a random id stored in it once (two URLs naming one database agree), and a copy of it told
apart (a restored backup, `CREATE DATABASE … TEMPLATE`, a copied SQLite file keep the stored id: the copy is
recognised by where it lives and given an id of its own, so two deployments never pass for one).

Where a database lives: on PostgreSQL its oid in the cluster (a copy or a restore is a new database with a new oid;
a rename keeps it), on SQLite its file's inode (a copy is a new file; the device is left out, so a volume mounted on
another node is the same file). A copy made byte for byte on another file system can keep the inode: not told.
"""

from __future__ import annotations

import logging
import os
import uuid

from sqlalchemy import Connection, delete, insert, select, text, update

from . import schema as t
from .store import Store
from .urls import sqlite_file

log = logging.getLogger(__name__)

META_KEY = "database_id"
FINGERPRINT_KEY = "database_fingerprint"
COPIED_AT_KEY = "database_copied_at"
"""When this database was found to be a copy (epoch s; absent: never): claims made before are not its own."""
CLAIM_PREFIX = "group_since:"
"""meta rows `group_since:<group id>`: when this database joined the consumer group (kafka/group_db.py)."""


def fingerprint(store: Store, conn: Connection) -> str | None:
    """Where the database lives (see the module docstring); None for an in-memory SQLite database."""
    if store.dialect == "postgresql":
        oid = conn.execute(text("SELECT oid FROM pg_database WHERE datname = current_database()")).scalar_one()
        return f"postgresql:{int(oid)}"
    path = sqlite_file(store.url)
    if not path or not os.path.exists(path):
        return None
    return f"sqlite:{os.stat(path).st_ino}"


def database_id(store: Store, now: float | None = None) -> str:
    """This database's id: read, or created once under the write lock (two processes starting together agree);
    a copy (stored fingerprint ≠ where it lives now) gets a new id, and its consumer-group claims are dated now."""
    with store.read() as conn:
        found, stored_print = store.get_meta(conn, META_KEY), store.get_meta(conn, FINGERPRINT_KEY)
        here = fingerprint(store, conn)
    if found and (here is None or stored_print == here):
        return found
    with store.write() as conn:
        found, stored_print = store.get_meta(conn, META_KEY), store.get_meta(conn, FINGERPRINT_KEY)
        here = fingerprint(store, conn)
        when = float(store.clock()) if now is None else now
        if found and stored_print is not None and here is not None and stored_print != here:
            new = uuid.uuid4().hex
            log.warning("this database is a copy of database %s (it lives elsewhere: %s, stored %s): it takes the id "
                        "%s, and its consumer-group claims date from now", found, here, stored_print, new)
            conn.execute(update(t.meta).where(t.meta.c.key == META_KEY).values(value=new))
            conn.execute(update(t.meta).where(t.meta.c.key.startswith(CLAIM_PREFIX, autoescape=True))
                         .values(value=repr(when)))
            _put(conn, COPIED_AT_KEY, repr(when))
            found = new
        elif not found:
            found = uuid.uuid4().hex
            conn.execute(insert(t.meta).values(key=META_KEY, value=found))
        if here is not None and stored_print != here:
            _put(conn, FINGERPRINT_KEY, here)
        return found


def _put(conn: Connection, key: str, value: str) -> None:
    """Set one meta row (delete + insert: the same statements on SQLite and PostgreSQL)."""
    conn.execute(delete(t.meta).where(t.meta.c.key == key))
    conn.execute(insert(t.meta).values(key=key, value=value))


def group_since(store: Store, group_id: str, sources: list[str], now: float | None = None) -> float:
    """When this database joined the consumer group `group_id` (epoch s), stored on first use: the group's
    partitions stay with the database that joined first, whoever leads the group (kafka/group_db.py). A database
    that already holds positions of the group's topics without a claim (driftline before claims) joined before
    any claim: 0, or the time it was found to be a copy."""
    key = CLAIM_PREFIX + group_id
    with store.read() as conn:
        found = store.get_meta(conn, key)
    if found is not None:
        return float(found)
    with store.write() as conn:
        found = store.get_meta(conn, key)
        if found is not None:
            return float(found)
        p = t.positions.c
        held = conn.execute(select(p.source).where(p.source.in_(sources), p.next_offset > 0).limit(1)).first()
        if held is not None:
            copied = store.get_meta(conn, COPIED_AT_KEY)
            since = float(copied) if copied is not None else 0.0
        else:
            since = float(store.clock()) if now is None else now
        conn.execute(insert(t.meta).values(key=key, value=repr(since)))
        return since
