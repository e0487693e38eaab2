"""Implicit negatives and label-horizon expiry against an independent join (issue 15 §6).

A seeded stream of 2,000 predictions over 200 days whose outcomes arrive within 25 days, between 35 and 80 days
(after the 30-day maturity: a fraud report correcting an implicit negative) or between 100 and 140 days (after
the 90-day label horizon), or never. It is ingested day by day through the real pipeline into SQLite, with the
maintenance pass after every day (as the service's hourly job does), and the stored counts are compared with a
join computed independently from the event list in closed form. The delays stay clear of the maturity and
horizon boundaries, so the daily maintenance schedule cannot change the answer.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from driftline.config import from_dict
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.readouts.metrics import MetricsQuery, metrics_document
from driftline.storage.store import Store

from helpers import outcome, pred

T0 = 1_700_000_000.0 - 1_700_000_000.0 % 86400
DAY = 86400.0
DAYS = 200
N = 2_000
MATURITY, HORIZON = 30 * DAY, 90 * DAY


def _stream(seed: int) -> tuple[list[tuple[float, bytes]], list[dict[str, Any]]]:
    """Time-stamped raw events and, per prediction, its facts (ts, flagged, outcome delay and label or None)."""
    rng = np.random.default_rng(seed)
    end = T0 + DAYS * DAY
    facts, events = [], []
    for i in range(N):
        t = T0 + float(rng.uniform(0, DAYS * DAY))
        score = float(rng.uniform())
        kind = rng.choice(["early", "late", "after_horizon", "never"], p=[0.35, 0.15, 0.1, 0.4])
        delay = {"early": rng.uniform(0, 25), "late": rng.uniform(35, 80),
                 "after_horizon": rng.uniform(100, 140), "never": None}[str(kind)]
        label = int(rng.uniform() < 0.5)
        t_o = None if delay is None else t + float(delay) * DAY
        if t_o is not None and t_o >= end:
            t_o = None  # not yet reported when the stream ends
        facts.append({"id": f"p{i}", "ts": t, "flagged": score >= 0.5, "kind": str(kind), "t_o": t_o, "label": label})
        events.append((t, pred(f"p{i}", score, t)))
        if t_o is not None:
            events.append((t_o, outcome(f"p{i}", label, t_o)))
    events.sort(key=lambda e: e[0])
    return events, facts


def _independent(facts: list[dict[str, Any]], watermark: float, implicit: bool) -> Counter[str]:
    """The final state of every prediction, from the facts alone (no engine, no store)."""
    out: Counter[str] = Counter()
    for f in facts:
        cell = "flagged" if f["flagged"] else "unflagged"
        explicit = f["t_o"] is not None and f["kind"] in ("early", "late")  # met its prediction's join state
        if explicit:
            state = "pos" if f["label"] == 1 else "neg"
        elif implicit and f["ts"] < watermark - MATURITY:
            state = "neg"
            out["implicit_negatives"] += 1
        else:
            state = "unl"
            if not implicit and f["ts"] < watermark - HORIZON:
                out["expired"] += 1
        out[f"{state}_{cell}"] += 1
        if f["kind"] == "after_horizon" and f["t_o"] is not None:  # arrives after the join state was dropped
            out["expired_outcomes" if f["t_o"] < watermark - HORIZON else "pending_outcomes"] += 1
    return out


@pytest.mark.parametrize("policy", ["implicit_negative_after", "explicit"])
def test_stored_counts_equal_an_independent_join(tmp_path, policy: str) -> None:
    events, facts = _stream(15)
    implicit = {"implicit_negative_after": "30d"} if policy != "explicit" else {}  # refused under explicit
    config = from_dict({"labels": {"policy": policy, **implicit, "horizon": "90d"}})
    store = Store(f"sqlite:///{tmp_path / 'labels.db'}")
    store.migrate()
    pipe = Pipeline(config, store, clock=lambda: T0 + 400 * DAY)
    maintained: Counter[tuple[str, str]] = Counter()
    for day in range(DAYS):
        batch = [raw for t, raw in events if T0 + day * DAY <= t < T0 + (day + 1) * DAY]
        if batch:
            pipe.process_batch([RawRecord(f"file:day{day}", 0, j, r) for j, r in enumerate(batch)])
        maintained.update(pipe.maintain())
    watermark = max(t for t, _ in events)
    want = _independent(facts, watermark, policy != "explicit")
    c = metrics_document(store, config, MetricsQuery("fraud", (DAYS + 1) * DAY, at=T0 + (DAYS + 1) * DAY))["counts"]
    got = {"pos_flagged": c["tp"], "pos_unflagged": c["fn"], "neg_flagged": c["fp"], "neg_unflagged": c["tn"],
           "unl_flagged": c["unlabelled_flagged"], "unl_unflagged": c["unlabelled_unflagged"],
           "implicit_negatives": c["implicit_negatives"], "expired": c["expired"]}
    assert got == {k: want[k] for k in got}
    assert c["predictions"] == N
    assert maintained[("implicit_negatives", "")] == want["implicit_negatives"] + sum(
        1 for f in facts if f["kind"] == "late" and f["t_o"] is not None) * (policy != "explicit")
    assert maintained[("expired_predictions", "")] == want["expired"]
    assert maintained[("expired_outcomes", "")] == want["expired_outcomes"]
    assert store.pending_outcomes() == want["pending_outcomes"]
    assert want["implicit_negatives" if policy != "explicit" else "expired"] > 100  # the stream exercises both
    # an outcome after maturity overturns (positive) or confirms (negative) an implicit negative, counted per label
    late = Counter("positive" if f["label"] == 1 else "negative" for f in facts
                   if f["kind"] == "late" and f["t_o"] is not None)
    stored = store.counters()
    for label in ("positive", "negative"):
        assert stored.get(("implicit_relabelled", label), 0) == (late[label] if policy != "explicit" else 0)
    assert min(late.values()) > 50
    store.close()
