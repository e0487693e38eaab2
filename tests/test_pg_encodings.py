"""driftline talks UTF-8 to PostgreSQL whatever the database's encoding or the URL's client_encoding (SRE tryout:
on a LATIN1 database one id outside Latin-1 ended the replay with 'unexpected UnicodeEncodeError' and stored
nothing of its batch; on a SQL_ASCII database every command failed with 'unexpected TypeError'). A character the
database cannot hold is the record's: a store_rejected dead letter naming it; the rest of the batch is stored."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from pg_fixtures import _require_pg, _with_db, admin_url, drop_database

IDS = ["café", "cafe\u0301x", "中", "plain"]


def _events(path) -> None:
    lines = [{"type": "prediction", "prediction_id": i, "model": "fraud", "score": 0.9 - 0.1 * n,
              "ts": "2026-11-30T10:00:00Z"} for n, i in enumerate(IDS)]
    lines.append({"type": "outcome", "prediction_id": "café", "label": 1, "ts": "2026-11-30T11:00:00Z"})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _database(encoding: str) -> str:
    import psycopg

    _require_pg()
    name = f"driftline_enc_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url(), connect_timeout=5, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} ENCODING '{encoding}' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'")
    return name


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "driftline.cli", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("encoding, query, rejected", [
    ("LATIN1", "", {"cafe\u0301x", "中"}),
    ("SQL_ASCII", "", set()),
    ("UTF8", "?client_encoding=latin1", set()),
])
def test_every_id_is_stored_or_dead_lettered_with_its_reason(tmp_path, encoding, query, rejected):
    name = _database(encoding)
    try:
        url = _with_db(admin_url(), name) + query
        _events(tmp_path / "e.jsonl")
        done = _cli("--db", url, "replay", str(tmp_path / "e.jsonl"), "--json")
        assert done.returncode == 0, done.stderr
        letters = json.loads(_cli("--db", url, "dead-letters", "--json").stdout)["recent"]
        assert {json.loads(d["raw"])["prediction_id"] for d in letters} == rejected
        assert all(d["reason"] == "store_rejected" and "LATIN1" in d["detail"] for d in letters)
        import psycopg

        with psycopg.connect(url, client_encoding="utf8") as conn:
            stored = dict(conn.execute(  # the label in force (issue 18): the outcome row's when one is held
                "SELECT p.prediction_id, COALESCE(o.label, p.label) FROM predictions p "
                "LEFT JOIN outcomes o ON o.prediction_id = p.prediction_id").fetchall())
        assert stored == {i: (1 if i == "café" else None) for i in IDS if i not in rejected}
    finally:
        drop_database(name)
