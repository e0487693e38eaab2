"""driftline's transactions are read committed whatever the database's default (SRE tryout: on a database whose
`default_transaction_isolation` was `repeatable read`, two writers started together failed — one migration with
"relation alembic_version already exists", a replay with SerializationFailure, exit 3 — because each transaction's
snapshot was taken before it waited for the write lock). Two concurrent replays, fresh database included, end in the
state of one sequential run."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from pg_fixtures import _require_pg, _with_db, admin_url, drop_database


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "driftline.cli", *args], capture_output=True, text=True,
                          timeout=300)


def _database(isolation: str | None) -> str:
    import psycopg

    _require_pg()
    name = f"driftline_iso_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url(), connect_timeout=5, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
        if isolation:
            conn.execute(f"ALTER DATABASE {name} SET default_transaction_isolation = '{isolation}'")
    return name


def _rounded(value: object) -> object:
    """Floats to 12 significant digits: sums over buckets (log loss) differ in the last bit with the order the
    two writers' batches landed in, as they would between two sequential orders."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def _state(url: str) -> tuple[object, list, list]:
    """What the runs stored: the metrics, every join row's label in force (its outcome row's when one is held: issue
    18), the dead-letter reasons."""
    import psycopg

    metrics = _rounded(json.loads(_cli("--db", url, "metrics", "--json", "--window", "60d").stdout))
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT p.prediction_id, COALESCE(o.label, p.label), o.prediction_id IS NULL AND p.implicit "
                            "FROM predictions p LEFT JOIN outcomes o ON o.prediction_id = p.prediction_id "
                            "ORDER BY 1").fetchall()
        letters = conn.execute("SELECT reason, count(*) FROM dead_letters GROUP BY 1 ORDER BY 1").fetchall()
    return metrics, rows, letters


@pytest.mark.parametrize("isolation", ["repeatable read", "serializable"])
def test_two_writers_on_a_stricter_default_isolation_store_everything_once(tmp_path, isolation):
    stream = tmp_path / "e.jsonl"
    done = _cli("simulate", "--days", "3", "--per-day", "1500", "--end", "2026-11-30T00:00:00Z", "--out", str(stream))
    assert done.returncode == 0, done.stderr
    lines = stream.read_text().splitlines(keepends=True)
    halves = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    halves[0].write_text("".join(lines[0::2]))
    halves[1].write_text("".join(lines[1::2]))
    strict, plain = _database(isolation), _database(None)
    try:
        strict_url, plain_url = _with_db(admin_url(), strict), _with_db(admin_url(), plain)
        for half in halves:
            done = _cli("--db", plain_url, "replay", str(half), "--batch-size", "200")
            assert done.returncode == 0, done.stderr
        together = [subprocess.Popen([sys.executable, "-m", "driftline.cli", "--db", strict_url, "replay", str(half),
                                      "--batch-size", "200"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True) for half in halves]
        errors = [p.communicate(timeout=300)[1] for p in together]
        assert [p.returncode for p in together] == [0, 0], errors
        assert _state(strict_url) == _state(plain_url)
    finally:
        drop_database(strict)
        drop_database(plain)
