"""The default window ends no later than the bucket holding now (SRE tryout: one prediction from a producer whose
clock ran 23 h fast — accepted, as ingestion takes events up to a day ahead — moved the default window of
`metrics` a day into the future: 'the last 7 days' silently lost a day of real data, 208,816 → 197,796
predictions)."""

from __future__ import annotations

import math

from driftline.config import Config
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import replay
from driftline.readouts.metrics import MetricsQuery, metrics_document
from driftline.readouts.windows import default_at
from driftline.storage.store import Store

from helpers import pred

HOUR = 3600.0


NOW = 1_764_906_000.0 - 2_400.0  # 2025-12-05T03:20:00Z: inside the hour bucket ending 04:00


def _store(tmp_path, name: str, skewed: bool) -> Store:
    """Eight days of predictions up to NOW (the store's and the pipeline's clock), plus, when `skewed`, one stamped
    23 h ahead (accepted: under the one-day skew ingestion allows)."""
    rows = [pred(f"p{i}", 0.2 + (i % 7) / 10, NOW - i * 600) for i in range(8 * 24 * 6)]
    if skewed:
        rows.append(pred("fast-clock", 0.9, NOW + 23 * HOUR))
    events = tmp_path / f"{name}.jsonl"
    events.write_bytes(b"\n".join(rows) + b"\n")
    store = Store(f"sqlite:///{tmp_path / name}.db", clock=lambda: NOW)
    store.migrate()
    result = replay(Pipeline(Config(), store, clock=lambda: NOW), str(events))
    assert result.dead == 0
    return store


def test_a_prediction_stamped_ahead_of_the_clock_does_not_move_the_default_window(tmp_path) -> None:
    plain = metrics_document(*_query(_store(tmp_path, "plain", False)))
    skewed = metrics_document(*_query(_store(tmp_path, "skewed", True)))
    assert skewed["window"] == plain["window"]
    assert skewed["window"]["end"] == "2025-12-05T04:00:00Z"  # the end of the bucket holding now
    assert skewed["counts"]["predictions"] == plain["counts"]["predictions"] == 1003  # NOW back to 11-28T04:00


def _query(store: Store) -> tuple[Store, Config, MetricsQuery]:
    return store, Config(), MetricsQuery(model="fraud", window_s=7 * 24 * HOUR)


def test_history_far_from_the_clock_keeps_its_own_end(tmp_path) -> None:
    events = tmp_path / "old.jsonl"
    t0 = 1_700_000_000.0
    events.write_bytes(b"\n".join(pred(f"p{i}", 0.5, t0 + i * 600) for i in range(100)) + b"\n")
    store = Store(f"sqlite:///{tmp_path / 'old.db'}", clock=lambda: t0 + 10 * 24 * HOUR)
    store.migrate()
    replay(Pipeline(Config(), store, clock=lambda: t0 + 10 * 24 * HOUR), str(events))
    newest_bucket_end = math.floor((t0 + 99 * 600) / HOUR) * HOUR + HOUR
    assert default_at(store, "fraud", 3600) == newest_bucket_end
    late = Store(store.url, clock=lambda: t0 + 99 * 600 - 5 * HOUR)  # the clock 5 h behind the newest prediction
    assert default_at(late, "fraud", 3600) == math.floor((t0 + 99 * 600 - 5 * HOUR) / HOUR) * HOUR + HOUR
