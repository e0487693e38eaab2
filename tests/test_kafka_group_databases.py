"""One consumer group, one database (kafka/group_db.py): two deployments on different databases sharing a
`kafka.group_id` are reported (ERROR line, /readyz 503, driftline_consumer_group_databases) and never split the
partitions between their databases; members of an older driftline (no database id) are assigned as before."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from sqlalchemy import insert

from driftline.kafka.group_db import DatabaseRangeAssignor, GroupWatch, database_id
from driftline.storage import schema
from driftline.storage.identity import group_since
from driftline.storage.store import Store
from kafka_fixtures import create_topics, unique_name
from kafka_service_support import StoreProbe, make_events, produce, start_service, wait_until, write_config

CLUSTER = SimpleNamespace(partitions_for_topic=lambda topic: {0, 1})


def _member(member_id: str, assignor: DatabaseRangeAssignor | None) -> Any:
    """A JoinGroup member as the leader sees it (subscription sent over the wire and decoded)."""
    sub = assignor.metadata({"p", "o"}) if assignor is not None else ConsumerProtocolSubscription(0, ["o", "p"], b"")
    return SimpleNamespace(member_id=member_id, group_instance_id=None,
                           metadata=ConsumerProtocolSubscription.decode(sub.encode()))


def _received(assignor: DatabaseRangeAssignor, sent: Any) -> list[str]:
    """Deliver an assignment over the wire to `assignor`; its partitions as 'o0', 'p1'."""
    got = ConsumerProtocolAssignment.decode(sent.encode())
    assignor.on_assignment(got, 1)
    return sorted(f"{tp.topic}{tp.partition}" for tp in got.partitions())


def test_leader_assigns_only_to_members_on_its_database() -> None:
    leader, other, same = DatabaseRangeAssignor("db-a"), DatabaseRangeAssignor("db-b"), DatabaseRangeAssignor("db-a")
    out = leader.assign(CLUSTER, [_member("m1", leader), _member("m2", other), _member("m3", same)])
    assert _received(leader, out["m1"]) == ["o0", "p0"] and _received(same, out["m3"]) == ["o1", "p1"]
    assert _received(other, out["m2"]) == []
    assert leader.report is not None and leader.report.kept and same.report == leader.report
    assert other.report is not None and not other.report.kept
    assert (other.report.databases, other.report.members_here, other.report.members_elsewhere) == (2, 2, 1)
    reason = other.report.reason("shared")
    assert "kafka group 'shared'" in reason and "kafka.group_id" in reason and "no partition" in reason


def test_the_database_that_joined_first_keeps_the_partitions_whoever_leads() -> None:
    """SRE tryout: with the leader's database keeping the partitions, one restart of a production member moved the
    group's leadership to a staging member, and every partition to staging. The database that joined the group
    first keeps them, whichever member leads; more members, then the smaller id, break a tie."""
    prod1, prod2 = DatabaseRangeAssignor("db-prod", 100.0), DatabaseRangeAssignor("db-prod", 100.0)
    staging = DatabaseRangeAssignor("db-staging", 500.0)
    for leader in (prod1, staging):
        out = leader.assign(CLUSTER, [_member("s", staging), _member("p1", prod1), _member("p2", prod2)])
        assert _received(staging, out["s"]) == []
        assert _received(prod1, out["p1"]) + _received(prod2, out["p2"]) == ["o0", "p0", "o1", "p1"]
        assert staging.report is not None and not staging.report.kept and staging.report.keeper == "db-prod"
        assert "database db-prod, which joined the group first" in staging.report.reason("g")
    lone = DatabaseRangeAssignor("db-other")  # no claim sent (+inf): never before a database that sent one
    out = lone.assign(CLUSTER, [_member("x", lone), _member("s", staging)])
    assert _received(staging, out["s"]) == ["o0", "o1", "p0", "p1"] and _received(lone, out["x"]) == []
    a, b, b2 = DatabaseRangeAssignor("db-a", 7.0), DatabaseRangeAssignor("db-b", 7.0), DatabaseRangeAssignor("db-b", 7.0)
    out = a.assign(CLUSTER, [_member("a", a), _member("b", b), _member("b2", b2)])
    assert _received(a, out["a"]) == []  # same claim: the database with more members keeps them


def test_a_claim_is_stored_once_and_a_database_with_positions_joined_before_any_claim(tmp_path: Path) -> None:
    fresh, incumbent = Store(f"sqlite:///{tmp_path / 'fresh.db'}"), Store(f"sqlite:///{tmp_path / 'inc.db'}")
    try:
        for s in (fresh, incumbent):
            s.migrate()
        with incumbent.write() as conn:  # positions stored by a driftline from before claims
            conn.execute(insert(schema.positions).values(source="kafka:p", partition=0, next_offset=42))
        assert group_since(fresh, "g", ["kafka:p", "kafka:o"], now=1000.0) == 1000.0
        assert group_since(fresh, "g", ["kafka:p", "kafka:o"], now=2000.0) == 1000.0  # stored once
        assert group_since(fresh, "other", ["kafka:p"], now=3000.0) == 3000.0  # per group
        assert group_since(incumbent, "g", ["kafka:p", "kafka:o"], now=1000.0) == 0.0
    finally:
        fresh.close()
        incumbent.close()


def test_a_copied_database_gets_its_own_id_and_a_claim_dated_when_it_was_found(tmp_path: Path) -> None:
    """SRE tryout: a database copied from production (a restored backup, a copied file) kept its id, so two
    deployments on the two copies shared a group as one database and split the partitions silently. A copy lives
    elsewhere (another file; on PostgreSQL another oid): it takes a new id and its claims date from then."""
    import shutil

    src = tmp_path / "prod.db"
    prod = Store(f"sqlite:///{src}")
    prod.migrate()
    with prod.write() as conn:
        conn.execute(insert(schema.positions).values(source="kafka:p", partition=0, next_offset=42))
    pid = database_id(prod)
    assert group_since(prod, "g", ["kafka:p"], now=1000.0) == 0.0
    prod.close()
    shutil.copy(src, tmp_path / "copy.db")
    prod, copy = Store(f"sqlite:///{src}"), Store(f"sqlite:///{tmp_path / 'copy.db'}")
    try:
        assert database_id(prod) == pid  # the original keeps its id
        cid = database_id(copy, now=5000.0)
        assert cid != pid and database_id(copy) == cid  # and the copy keeps its new one
        assert group_since(copy, "g", ["kafka:p"]) == 5000.0  # its claim dates from when it was found
        assert group_since(copy, "h", ["kafka:p"]) == 5000.0  # holding positions, a new group: no earlier either
        assert group_since(prod, "g", ["kafka:p"]) == 0.0
    finally:
        prod.close()
        copy.close()


def test_one_database_or_unknown_members_split_as_plain_range() -> None:
    """An older driftline (no user_data) is unknown, not a mismatch: a rolling upgrade keeps splitting."""
    a1, a2 = DatabaseRangeAssignor("db-a"), DatabaseRangeAssignor("db-a")
    out = a1.assign(CLUSTER, [_member("m1", a1), _member("m2", a2), _member("m3", None)])
    assert [_received(a1, out["m1"]), _received(a2, out["m2"])] == [["o0", "p0"], ["o1", "p1"]]
    assert out["m3"].partitions() == []  # Range: 2 partitions per topic for 3 members
    assert a1.report is None and a2.report is None


def test_watch_logs_once_per_change_and_sets_the_gauge(caplog: pytest.LogCaptureFixture) -> None:
    gauge = SimpleNamespace(value=None, set=lambda v: setattr(gauge, "value", v))
    watch = GroupWatch("g1", gauge)
    mine = watch.assignor_for("db-a")
    watch.check()
    assert watch.problem() is None and gauge.value is None  # nothing assigned yet: nothing known
    other = DatabaseRangeAssignor("db-b")
    _received(mine, other.assign(CLUSTER, [_member("m1", other), _member("m2", mine)])["m2"])
    watch.check()
    watch.check()
    assert gauge.value == 2 and "kafka group 'g1'" in (watch.problem() or "")
    assert [r.levelname for r in caplog.records] == ["ERROR"]
    _received(mine, mine.assign(CLUSTER, [_member("m2", mine)])["m2"])
    watch.check()
    assert watch.problem() is None and gauge.value == 1 and "one database again" in caplog.records[-1].message


def test_database_id_is_stored_once_and_names_the_database_not_the_url(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    stores = [Store(f"sqlite:///{tmp_path / 'a.db'}"), Store(f"sqlite:///{tmp_path / 'b.db'}")]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    stores.append(Store("sqlite:///./sub/../a.db"))
    try:
        for s in stores:
            s.migrate()
        a, b, a_again = (database_id(s) for s in stores)
        assert a == a_again == database_id(stores[0]) and a != b
    finally:
        for s in stores:
            s.close()


def _readyz(svc: Any) -> tuple[int, str]:
    return svc.get("/readyz")


def _gauge(svc: Any) -> float | None:
    status, body = svc.get("/metrics")
    m = re.search(r"^driftline_consumer_group_databases (\S+)$", body, re.M) if status == 200 else None
    return float(m.group(1)) if m else None


@pytest.mark.kafka
@pytest.mark.slow
def test_two_deployments_on_different_databases_sharing_a_group(kafka_bootstrap: str, tmp_path: Path) -> None:
    """A runs on a.db; B, a copy of the deployment pointed at b.db with the same group, joins. Without the check
    each took half the partitions and each database held half the events, both ready. Now both report it (ERROR,
    /readyz naming the group and kafka.group_id, gauge 2): A keeps every partition and stays ready (200, its reason
    says so), B gets none and is not ready (503), b.db stays empty; once B leaves, A's warning is gone."""
    topics, group = {"predictions": unique_name("predictions"), "outcomes": unique_name("outcomes")}, unique_name("g")
    create_topics(kafka_bootstrap, topics.values(), 2)
    config = write_config(tmp_path, topics, group)
    events = make_events(tmp_path, days=0.5)
    db_a, db_b = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    a = start_service(tmp_path, config, db_a, kafka_bootstrap, name="a")
    probe_a, probe_b = StoreProbe(db_a, topics), StoreProbe(db_b, topics)
    b = None
    try:
        wait_until(lambda: "resuming at stored positions" in a.log(), 60, "A positioned", procs=(a,))
        b = start_service(tmp_path, config, db_b, kafka_bootstrap, name="b")
        procs = (a, b)
        for svc, want in ((a, 200), (b, 503)):  # A keeps the partitions and does its job: ready, saying why
            wait_until(lambda: _readyz(svc)[0] == want and "kafka.group_id" in _readyz(svc)[1], 60,
                       f"{svc.log_path.name}: /readyz reports the shared group", procs=procs)
            status, body = _readyz(svc)
            assert f"kafka group '{group}' is shared by driftline processes writing to 2 different databases" in body
            assert re.search(rf"ERROR .*kafka group '{group}' is shared", svc.log()), svc.log()
            assert _gauge(svc) == 2
        assert "this process is assigned no partition" in _readyz(b)[1]
        produce(kafka_bootstrap, topics, events.records)
        wait_until(lambda: probe_a.done(events), 90, "every record stored in a.db", procs=procs)
        assert probe_b.total() == 0  # nothing split off into the other deployment's database
        assert b.terminate_when_stable() == 0
        wait_until(lambda: "kafka.group_id" not in _readyz(a)[1], 60, "A's warning gone once B left", procs=(a,))
        assert _readyz(a)[0] == 200
        assert "one database again" in a.log() and _gauge(a) == 1
        assert a.terminate_when_stable() == 0
    finally:
        a.kill()
        if b is not None:
            b.kill()
        probe_a.close()
        probe_b.close()


@pytest.mark.postgres
def test_database_id_on_postgres_is_the_same_under_another_host_name(pg_url: str) -> None:
    """localhost and 127.0.0.1 name one database: one id (the URL text is not the identity)."""
    stores = [Store(pg_url), Store(pg_url.replace("@127.0.0.1:", "@localhost:"))]
    assert stores[0].url != stores[1].url
    try:
        stores[0].migrate()
        assert database_id(stores[1]) == database_id(stores[0])
    finally:
        for s in stores:
            s.close()


@pytest.mark.postgres
def test_a_postgres_database_created_from_another_as_template_gets_its_own_id(pg_database: Any) -> None:
    """`CREATE DATABASE copy TEMPLATE prod` copies the meta table with the id: the copy (another oid) takes a new
    one; the original keeps its own."""
    import psycopg
    from psycopg import sql

    from pg_fixtures import admin_url, drop_database

    prod = Store(pg_database.url)
    prod.migrate()
    pid = database_id(prod)
    prod.close()
    name = pg_database.name + "_copy"
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name),
                                                                      sql.Identifier(pg_database.name)))
    copy = Store(pg_database.url.rsplit("/", 1)[0] + "/" + name)
    prod = Store(pg_database.url)
    try:
        assert database_id(prod) == pid
        cid = database_id(copy)
        assert cid != pid and database_id(copy) == cid
    finally:
        copy.close()
        prod.close()
        drop_database(name)
