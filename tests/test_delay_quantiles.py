"""Label-delay quantiles read from the binned delay histogram (grids.DELAY_EDGES, log-spaced, 8.7 % wide): each is
the geometric middle of its bin, so it lies within half a bin of the exact quantile. A new-user tryout found them
3-8 % high: 50 labels each exactly 24 h late read p50 24.7 h and p95 25.6 h ("median label delay 25 h"), because
the old estimator placed a quantile inside its bin by the bin's counts, and a point mass then reads anywhere up to
a whole bin high; the 95th percentile (label maturity) read the worst."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from driftline.analysis.classification import delay_quantiles
from driftline.core.grids import DELAY_EDGES, DELAY_RATIO, N_DELAY_BINS, delay_bin

from cli_helpers import cli_json

HALF_BIN = math.log(DELAY_RATIO) / 2


def _hist(delays: np.ndarray) -> np.ndarray:
    """The delay histogram the engine would store for these delays (seconds)."""
    return np.bincount(delay_bin(delays), minlength=N_DELAY_BINS).astype(np.int64)


@pytest.mark.parametrize("seconds", [3600.0, 86400.0, 7 * 86400.0, 90.0, 61.0, 30 * 86400.0])
def test_a_point_mass_reads_within_half_a_bin(seconds):
    q = delay_quantiles(_hist(np.full(50, seconds)))
    for key in ("p50", "p95"):
        assert abs(math.log(q[key] / seconds)) <= HALF_BIN + 1e-12, (key, q[key] / seconds)


@pytest.mark.parametrize("seed", range(5))
def test_random_delays_agree_with_numpy_within_a_bin(seed):
    rng = np.random.default_rng(seed)
    delays = np.exp(rng.normal(math.log(rng.uniform(600, 30 * 86400)), rng.uniform(0.2, 2.0), 4000))
    delays = delays[(delays >= DELAY_EDGES[1]) & (delays < DELAY_EDGES[-1])]
    q = delay_quantiles(_hist(delays), (0.5, 0.9, 0.95, 0.99))
    for p in (50, 90, 95, 99):
        exact = float(np.percentile(delays, p))
        assert abs(math.log(q[f"p{p}"] / exact)) <= math.log(DELAY_RATIO), (p, q[f"p{p}"], exact)


def test_edges_empty_and_the_first_and_last_bins():
    assert delay_quantiles(np.zeros(N_DELAY_BINS, dtype=np.int64)) == {"p50": None, "p95": None}
    assert delay_quantiles(_hist(np.full(3, 10.0))) == {"p50": 30.0, "p95": 30.0}  # [0, 1 min): ±30 s
    assert delay_quantiles(_hist(np.full(3, 900 * 86400.0)))["p95"] == DELAY_EDGES[-1]  # open-ended: its lower edge
    assert delay_quantiles(_hist(np.array([3600.0, 86400.0])), (0.0,))["p0"] == pytest.approx(3600, rel=0.05)


def _stream(path: Path, hours: float) -> Path:
    """50 predictions ten minutes apart, each labelled exactly `hours` later (the tryout's stream)."""
    t0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
    stamp = lambda t: t.isoformat().replace("+00:00", "Z")  # noqa: E731
    with path.open("w") as f:
        for i in range(50):
            ts = t0 + timedelta(minutes=10 * i)
            f.write(json.dumps({"type": "prediction", "prediction_id": f"p{i}", "model": "m", "score": 0.2 + i % 5 / 8,
                                "ts": stamp(ts)}) + "\n")
            f.write(json.dumps({"type": "outcome", "prediction_id": f"p{i}", "label": i % 2,
                                "ts": stamp(ts + timedelta(hours=hours))}) + "\n")
    return path


@pytest.mark.parametrize("hours", [1.0, 24.0, 168.0])
def test_metrics_of_exact_delays_read_them_within_half_a_bin(tmp_path, capsys, hours):
    url = f"sqlite:///{tmp_path / 'd.db'}"
    cli_json(capsys, "--db", url, "replay", "--json", str(_stream(tmp_path / "d.jsonl", hours)))
    doc = cli_json(capsys, "--db", url, "metrics", "--json", "--window", "30d", "--at", "2026-11-09T00:00:00Z")
    for key in ("p50", "p95"):
        got = doc["label_delay_seconds"][key]
        assert abs(math.log(got / (hours * 3600))) <= HALF_BIN + 1e-12, (key, got / 3600)


def test_the_maturity_note_of_a_24h_stream_says_1_day(tmp_path, capsys):
    """The note of a window whose labels are not in yet states the delays as the other readouts do ('1 d'), not
    rounded to whole hours: 24 h read within its bin (24.65 h) printed as "median label delay 25 h"."""
    events = _stream(tmp_path / "d.jsonl", 24.0)
    with events.open("a") as f:
        for i in range(10):
            f.write(json.dumps({"type": "prediction", "prediction_id": f"late{i}", "model": "m", "score": 0.5,
                                "ts": f"2026-11-08T0{i}:00:00Z"}) + "\n")
    url = f"sqlite:///{tmp_path / 'd.db'}"
    cli_json(capsys, "--db", url, "replay", "--json", str(events))
    doc = cli_json(capsys, "--db", url, "metrics", "--json", "--window", "1d", "--at", "2026-11-08T12:00:00Z")
    note = doc["label_maturity"]["note"]
    assert "median label delay 1 d, 95th percentile 1 d" in note, note


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_maturity_waits_at_least_the_exact_95th_percentile(seed):
    """Label maturity waits for the top of the bin holding the p95 delay, so the bin's resolution can make it wait
    longer but never declare a window matured before its labels arrived (the middle of the bin would read up to
    4.3 % short: a delay just under a bin's upper edge)."""
    from driftline.analysis.classification import delay_upper

    rng = np.random.default_rng(seed)
    delays = rng.lognormal(math.log(86400), 1.0, 5000)
    wait = delay_upper(_hist(delays), 0.95)
    exact = float(np.percentile(delays, 95, method="inverted_cdf"))
    assert exact <= wait <= exact * DELAY_RATIO * 1.000001
    top = DELAY_EDGES[100] * 0.999  # every delay just under a bin's top edge: the middle reads 4 % short
    assert delay_upper(_hist(np.full(50, top)), 0.95) >= top > delay_quantiles(_hist(np.full(50, top)))["p95"]
