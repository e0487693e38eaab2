"""SRE tryout: while the database of serve/run was unreachable, `leader lock check failed:` was logged at every
scrape and evaluation (every 2-4 s) with the driver's whole multi-line text, and nothing said when it recovered.
Now: one warning with the first line when the checks start failing, then at most one every few minutes with a
count, and one when a check succeeds again. Times come from an injected clock."""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path

import pytest

from driftline.streak import FailureStreak

LOGGER = "driftline.service.leader"


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


class _Err(Exception):
    pass


def test_a_streak_is_logged_at_its_start_every_five_minutes_and_at_its_end(caplog) -> None:
    now = [1000.0]
    streak = FailureStreak("leader lock check", logging.getLogger(LOGGER), every_s=300.0, monotonic=lambda: now[0])
    caplog.set_level(logging.INFO, logger="driftline")
    err = _Err("connection failed: Connection refused\n\tIs the server running on that host?\n[SQL: SELECT 1]")
    for _ in range(75):  # a check every 4 s: 296 s of outage
        streak.failed(err)
        now[0] += 4.0
    assert _lines(caplog) == ["leader lock check failed: connection failed: Connection refused "
                              "(logged again every 300s while it keeps failing)"]
    streak.failed(err)  # 300 s after the first line
    streak.failed(err)
    assert _lines(caplog)[1:] == ["leader lock check still failing, 76 attempts in 300s: connection failed: "
                                  "Connection refused"]
    now[0] += 10.0
    streak.succeeded()
    streak.succeeded()
    assert _lines(caplog)[2:] == ["leader lock check succeeded again after 77 failed attempts in 310s"]
    streak.failed(_Err("timeout"))  # a new outage is a new streak
    assert _lines(caplog)[3:] == ["leader lock check failed: timeout (logged again every 300s while it keeps "
                                  "failing)"]


@pytest.mark.postgres
def test_leader_lock_checks_against_an_unreachable_database_log_one_line_then_the_recovery(pg_behind_forwarder,
                                                                                          caplog) -> None:
    from driftline.config import Config
    from driftline.service.process import Service
    from driftline.storage.store import Store

    pg = pg_behind_forwarder
    store = Store(pg.url)
    store.migrate()
    now = [0.0]
    service = Service(Config(model="m"), store, port=0, evaluate=False)
    service.lock_failures.monotonic = lambda: now[0]
    locks = (service.leader, service.exporter_lock)
    assert all(lock.failures is service.lock_failures for lock in locks)  # one streak per process, not per lock
    caplog.set_level(logging.INFO, logger="driftline")
    try:
        assert all(lock.held() for lock in locks)
        pg.forwarder.stop()  # live connections dropped, new ones refused
        for _ in range(30):  # two minutes of scrapes and evaluations
            assert not any(lock.held() for lock in locks)
            now[0] += 4.0
        lines = _lines(caplog)
        assert len(lines) == 1 and lines[0].startswith("leader lock check failed: "), lines
        assert "\n" not in lines[0] and "[SQL:" not in lines[0], lines[0]
        now[0] += 300.0
        assert not service.exporter_lock.held()
        assert _lines(caplog)[1].startswith("leader lock check still failing, 61 attempts in 420s: "), _lines(caplog)
        pg.forwarder.start()
        assert service.exporter_lock.held() and service.leader.held()
        assert _lines(caplog)[2:] == ["leader lock check succeeded again after 61 failed attempts in 420s"]
    finally:
        pg.forwarder.start()
        for lock in locks:
            lock.release()
        store.close()


def _templates(section: str) -> list[re.Pattern[str]]:
    """The log lines the runbook section quotes, as patterns: `<…>` placeholders match anything."""
    quoted = re.findall(r"`([^`]+)`", section)
    return [re.compile(".+".join(re.escape(part) for part in re.split(r"<[^>]+>", q)) + "$") for q in quoted]


def test_the_database_runbook_quotes_the_lines_a_serve_replica_really_logs(caplog) -> None:
    """Verification tryout: RUNBOOKS.md DriftlineDatabaseUnreachable quoted only `run`'s consumer lines (`database
    unavailable (…)`, `database reachable again after <N>s`), which a `serve` replica never logs; a replica logs
    its leader lock streak. Every line the streak logs must match a line the section quotes, and every log line
    the section quotes must come from a format string under src/."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "RUNBOOKS.md").read_text()
    section = text.split("## DriftlineDatabaseUnreachable", 1)[1].split("\n## ", 1)[0]
    now = [0.0]
    streak = FailureStreak("leader lock check", logging.getLogger(LOGGER), every_s=300.0, monotonic=lambda: now[0])
    caplog.set_level(logging.INFO, logger="driftline")
    for _ in range(3):
        streak.failed(_Err("connection failed: Connection refused"))
        now[0] += 150.0
    streak.succeeded()
    logged = _lines(caplog)
    assert len(logged) == 3
    patterns = _templates(section)
    for line in logged:
        assert any(p.match(line) for p in patterns), line
    formats = _source_formats()
    quoted = [q for q in re.findall(r"`([^`]+)`", section) if re.match(r"(leader|database|metrics|trigger) ", q)]
    assert len(quoted) >= 8
    for q in quoted:
        filled = re.sub(r"<[^>]+>", "X", q)
        assert any(f.fullmatch(filled) for f in formats), f"no log format in src/ gives {q!r}"


def _source_formats() -> list[re.Pattern[str]]:
    """Every string literal (and f-string) under src/ as a pattern: %-conversions and {…} match anything."""
    out = []
    for path in (Path(__file__).resolve().parents[1] / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > 8:
                parts = re.split(r"%[-#0 +]*\d*(?:\.\d+)?[sdfgr]", node.value)
            elif isinstance(node, ast.JoinedStr):
                parts, cur = [], ""
                for v in node.values:
                    if isinstance(v, ast.Constant):
                        cur += str(v.value)
                    else:
                        parts.append(cur)
                        cur = ""
                parts.append(cur)
            else:
                continue
            out.append(re.compile(".*".join(re.escape(x) for x in parts), re.S))
    return out
