"""The leader lock on SQLite (a flock on `<db>.leader-<role>`): of several processes writing one SQLite file only
one exports the database's series (`driftline_leader 1`), evaluates triggers and runs the scheduled jobs, and
another takes over when it stops or is killed. Before, every process on SQLite led: two `driftline run` on one file
both exported `driftline_events_total`, doubling the rates summed across replicas on dashboards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from driftline.config import load
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.ingest.simulate import SimSpec, stream
from driftline.service.file_lock import sqlite_database_path
from driftline.service.leader import EXPORT_LOCK_KEY, LOCK_KEY, LeaderLock
from driftline.service.process import Service
from driftline.service.scheduler import DONE, EXISTS, NOT_LEADER, SKIPPED
from driftline.storage.store import Store

from kafka_service_support import wait_until
from procs import stop

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "driftline.example.yaml"
END = 1_795_996_800.0  # 2026-11-30T00:00:00Z
TIMEOUT_S = 60.0
"""A hang guard only: a takeover happens at the next check, well within a second on an idle machine."""


def _poll(what: str, check: Callable[[], Any]) -> Any:
    """wait_until with this module's hang guard."""
    return wait_until(check, TIMEOUT_S, what, every=0.1)


def _db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 't1.db'}"
    config = load(EXAMPLE)
    store = Store(url, clock=lambda: END)
    store.migrate()
    enc = msgspec.json.Encoder()
    raws = [enc.encode(e) for e in stream(SimSpec(start=END - 3 * 86400, days=2, per_day=300, drift_day=None), END)]
    Pipeline(config, store, clock=lambda: END).process_batch(
        [RawRecord("file:sim", 0, i, r) for i, r in enumerate(raws)])
    store.close()
    return url


def _scrape(url: str) -> dict[str, float]:
    """driftline_leader and the prediction total of one exporter (absent series are left out)."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("driftline_leader "):
            out["leader"] = float(line.split()[-1])
        elif line.startswith("driftline_events_total{") and 'type="prediction"' in line:
            out["predictions"] = float(line.split()[-1])
    return out


def test_one_holder_per_lock_on_one_sqlite_file(tmp_path: Path) -> None:
    """Two stores on one file: the first lock taken is held (and confirmed), the other refused until released;
    the three roles are separate files, so a replica may export without evaluating."""
    url = f"sqlite:///{tmp_path / 'one.db'}"
    a_store, b_store = Store(url), Store(url)
    try:
        a, b = LeaderLock(a_store), LeaderLock(b_store)
        assert a.held() and a.held() and not b.held()
        export = LeaderLock(b_store, EXPORT_LOCK_KEY)
        assert export.held() and a.held()
        assert (tmp_path / "one.db.leader-evaluate").exists() and (tmp_path / "one.db.leader-export").exists()
        a.release()
        assert b.held() and not a.held()
        b.release()
        export.release()
    finally:
        a_store.close()
        b_store.close()


def test_a_lock_whose_file_was_removed_is_taken_anew(tmp_path: Path) -> None:
    """Someone deletes the sidecar: a newcomer would lock a new file, so the holder gives its lock up and competes
    for the new file (one holder again, not two)."""
    url = f"sqlite:///{tmp_path / 'gone.db'}"
    s1, s2 = Store(url), Store(url)
    try:
        a, b = LeaderLock(s1), LeaderLock(s2)
        assert a.held()
        (tmp_path / "gone.db.leader-evaluate").unlink()
        assert b.held()  # the newcomer locks the new file
        assert not a.held()
        a.release()
        b.release()
    finally:
        s1.close()
        s2.close()


def test_a_killed_holder_frees_the_lock(tmp_path: Path) -> None:
    """kill -9 of the holding process: the kernel drops its flock, and the other process's next check takes it."""
    url = f"sqlite:///{tmp_path / 'k.db'}"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         "from driftline.storage.store import Store\n"
         "from driftline.service.leader import LeaderLock\n"
         f"lock = LeaderLock(Store({url!r}))\n"
         "print(lock.held(), flush=True)\n"
         "time.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True)
    store = Store(url)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
        mine = LeaderLock(store)
        assert not mine.held()
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        _poll("the lock after its holder was killed", mine.held)
        mine.release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        store.close()


def test_in_memory_databases_always_lead_and_uris_name_their_file(tmp_path: Path) -> None:
    """No other process can open an in-memory database: its lock is always held. A `file:` URI (uri=true) locks
    beside the file it opens; without uri=true pysqlite opens a file literally named `file:…`, and so does the lock."""
    store = Store("sqlite://")
    try:
        assert LeaderLock(store).held() and LeaderLock(store).held()
    finally:
        store.close()
    f = tmp_path / "u.db"
    assert sqlite_database_path(f"sqlite:///{f}") == str(f)
    assert sqlite_database_path(f"sqlite:///file:{f}?mode=rw&uri=true") == str(f)
    assert sqlite_database_path(f"sqlite:///file://localhost{f}?uri=true") == str(f)
    assert sqlite_database_path(f"sqlite:///file:{str(f).replace('u.db', 'u%2Edb')}?uri=true") == str(f)
    assert sqlite_database_path("sqlite:///file:m?mode=memory&cache=shared&uri=true") is None
    assert sqlite_database_path("sqlite:///:memory:") is None and sqlite_database_path("sqlite://") is None
    assert sqlite_database_path(f"sqlite:///file:{f}") == os.path.abspath(f"file:{f}")
    assert sqlite_database_path("postgresql://u@h/db") is None
    Store(f"sqlite:///{f}").migrate()
    plain, uri = Store(f"sqlite:///{f}"), Store(f"sqlite:///file:{f}?mode=rw&uri=true")
    try:
        a, b = LeaderLock(plain, LOCK_KEY), LeaderLock(uri, LOCK_KEY)
        assert a.held() and not b.held()  # one database, one lock, whichever way it is named
        a.release()
        b.release()
    finally:
        plain.close()
        uri.close()


def test_two_services_on_one_sqlite_file_lead_once_and_hand_over(tmp_path: Path) -> None:
    """Two Services (exporter, evaluation, jobs) on one SQLite file: exactly one exports driftline_leader 1 and the
    pipeline totals, one evaluates, one runs the jobs; when it stops, the other takes over at its next check."""
    url = _db(tmp_path)
    config = load(EXAMPLE)
    stores = [Store(url, clock=lambda: END), Store(url, clock=lambda: END)]
    services = [Service(config, s, clock=lambda: END, port=0, drift=None, jobs=True) for s in stores]
    try:
        for svc in services:
            svc.start()
        scrapes = [_scrape(svc.url) for svc in services]
        assert sorted(s["leader"] for s in scrapes) == [0.0, 1.0]
        leader = [s["leader"] for s in scrapes].index(1.0)
        other = 1 - leader
        assert scrapes[leader]["predictions"] > 0 and "predictions" not in scrapes[other]
        evaluated = [svc.evaluate_once() is not None for svc in services]
        assert evaluated.count(True) == 1
        reports = [svc.jobs.jobs.weekly_report().status for svc in services]
        assert sorted(r == NOT_LEADER for r in reports) == [False, True]
        assert {r for r in reports if r != NOT_LEADER} <= {DONE, EXISTS, SKIPPED}

        services[leader].stop()
        got = _poll("the standby to take over the export", lambda: _scrape(services[other].url).get("leader") == 1.0)
        assert got and _scrape(services[other].url)["predictions"] == scrapes[leader]["predictions"]
        assert services[other].evaluate_once() is not None
        assert services[other].jobs.jobs.weekly_report().status != NOT_LEADER
    finally:
        for svc in services:
            svc.stop()
        for s in stores:
            s.close()


def test_two_serve_processes_on_one_sqlite_file_and_a_kill_9(tmp_path: Path) -> None:
    """`driftline serve` twice on one SQLite file (as `run` would be): one driftline_leader 1, only it exports the
    pipeline totals; kill -9 it, and the survivor exports them within the retry period (its next scrape)."""
    url = _db(tmp_path)
    ports = [_free_port(), _free_port()]
    procs = [subprocess.Popen([sys.executable, "-m", "driftline", "--config", str(EXAMPLE), "--db", url, "serve",
                               "--port", str(p), "--no-evaluate"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for p in ports]
    try:
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        scrapes = _poll("both exporters", lambda: _both(urls))
        assert sorted(s["leader"] for s in scrapes) == [0.0, 1.0]
        assert sum("predictions" in s for s in scrapes) == 1
        leader = [s["leader"] for s in scrapes].index(1.0)
        procs[leader].send_signal(signal.SIGKILL)
        procs[leader].wait(timeout=30)
        survivor = urls[1 - leader]
        _poll("the survivor to export the pipeline totals", lambda: _scrape(survivor).get("leader") == 1.0)
        assert _scrape(survivor)["predictions"] == scrapes[leader]["predictions"]
    finally:
        for p in procs:
            stop(p)


def _both(urls: list[str]) -> list[dict[str, float]] | None:
    """Scrapes of every exporter once all answer with driftline_leader, else None (an exporter answers with build
    info only until its schema check is done: CI under load scraped one in between)."""
    try:
        scrapes = [_scrape(u) for u in urls]
    except OSError:
        return None
    return scrapes if all("leader" in s for s in scrapes) else None


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
