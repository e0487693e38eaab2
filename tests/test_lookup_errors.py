"""A database error during a batch's join lookup is the database's, not a record's: the batch is not retried on the
broken connection, the store reports itself unavailable (replay exits 3, run retries) and nothing is written
(SRE tryout: a connection terminated during the lookup ended replay with exit 1, PendingRollbackError)."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from driftline.config import from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage.errors import StoreUnavailable
from driftline.storage.store import Store

from helpers import outcome, pred

T0 = 1_700_000_000.0


@pytest.mark.parametrize("kill", ["terminated", "cancelled"])
def test_a_connection_lost_or_a_statement_cancelled_during_the_lookup_makes_the_store_unavailable(pg_url, monkeypatch, kill):
    store = Store(pg_url, clock=lambda: T0 + 86400)
    store.migrate()
    admin = Store(pg_url)
    real = Store.load_join
    calls = []

    def killed_first(self, conn, ids):
        calls.append(1)
        if len(calls) == 1 and kill == "terminated":  # the server ends this connection as the lookup starts
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
            with admin.engine.connect() as other:
                other.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
        elif len(calls) == 1:  # the lookup's statement is cancelled (a statement timeout): the transaction aborts
            conn.execute(text("SET LOCAL statement_timeout = '50ms'"))
            conn.execute(text("SELECT pg_sleep(2)"))
        return real(self, conn, ids)

    monkeypatch.setattr(Store, "load_join", killed_first)
    pipe = Pipeline(from_dict({}), store, clock=lambda: T0 + 86400)
    records = [RawRecord("file:x", 0, i, r) for i, r in enumerate([pred("p1", 0.9, T0), outcome("p1", 1, T0 + 60)])]
    with pytest.raises(StoreUnavailable):
        pipe.process_isolating(records)
    assert len(calls) == 1  # not looked up again on the broken connection
    assert store.positions("file:x") == {}
    pipe.process_isolating(records)  # the retry, on a new connection, stores the batch
    assert store.positions("file:x") == {0: 2}
    admin.close()
    store.close()
