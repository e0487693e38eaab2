"""A database migrated by a newer driftline (a revision this version's scripts do not define) is refused with one
line naming the revisions on both sides, before anything is read or written: a downgrade, or an old replica left
running in a rolling upgrade. Alembic's own error was `unexpected CommandError: Can't locate revision identified by
'…'` (exit 1), naming neither side."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from driftline.cli import main
from driftline.storage.revisions import script_heads
from driftline.storage.store import Store

from helpers import migrated_then

FUTURE = "0099_future"
EVENT = ('{"type":"prediction","prediction_id":"p1","model":"fraud","ts":"2026-11-29T00:00:00Z","score":0.3}\n'
         '{"type":"prediction"\n')


@pytest.fixture(params=["sqlite", "postgres"])
def newer_db(request, tmp_path) -> str:
    """A database at this version's heads plus one revision only a newer version knows."""
    url = f"sqlite:///{tmp_path / 'd.db'}" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    return migrated_then(url, "INSERT INTO alembic_version (version_num) VALUES (:v)", v=FUTURE)


def _written(url: str) -> tuple[int, ...]:
    engine = create_engine(url)
    with engine.connect() as conn:
        counts = tuple(conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()
                       for t in ("predictions", "buckets", "dead_letters", "positions", "counters", "meta"))
        versions = sorted(r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version")))
    engine.dispose()
    assert versions == sorted([*script_heads(), FUTURE])  # the version table is left as the newer version wrote it
    return counts


def test_store_refuses_a_schema_migrated_by_a_newer_version(newer_db: str) -> None:
    from driftline.storage.errors import SchemaTooNew

    with pytest.raises(SchemaTooNew) as raised:
        Store(newer_db).migrate()
    message = str(raised.value)
    assert FUTURE in message and "0010_joinpack" in message and "newer than this driftline" in message


@pytest.mark.parametrize("argv", [["replay", "EVENTS"], ["metrics", "--json"], ["serve", "--port", "0"]],
                         ids=lambda a: a[0])
def test_commands_refuse_it_with_one_line_and_write_nothing(newer_db: str, argv: list[str], tmp_path,
                                                             capsys) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text(EVENT)
    before = _written(newer_db)
    code = main(["--db", newer_db, *[str(events) if a == "EVENTS" else a for a in argv]])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "unexpected" not in err and "CommandError" not in err
    assert f"records revision(s) {FUTURE}" in " ".join(err.split())
    assert _written(newer_db) == before
