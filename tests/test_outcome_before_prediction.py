"""Outcomes stamped before their prediction: joined and counted as labels, but their negative delay is left out of
the label-delay histograms (it was clamped into the first bin, so half of a stream's outcomes stamped an hour early
made the median label delay read 60 s instead of 3 days, and the report's maturity period shrank with it), and each
such join is counted (replay summary, driftline_outcomes_before_prediction_total)."""

from __future__ import annotations

import random
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from driftline.cli import main
from driftline.config import Config
from driftline.core.engine import EngineSettings
from driftline.core.grids import N_DELAY_BINS, delay_bin
from driftline.service.process import Service
from driftline.storage.store import Store

from cli_helpers import cli_json
from helpers import decoded, outcome, pred
from test_batch_engine import JoinStore, _batched

T0 = 1_700_000_000.0
DAY = 86400.0


@st.composite
def skewed_streams(draw):
    """Predictions with 0-3 outcomes each, some stamped up to two hours before the prediction, in any order."""
    raws: list[bytes] = []
    truth: dict[str, tuple[float, float, int]] = {}  # id -> (prediction ts, outcome ts, label) of the one in force
    for i in range(draw(st.integers(1, 25))):
        ts = T0 + draw(st.integers(0, 10 * 86400))
        raws.append(pred(f"id{i}", draw(st.floats(0, 1)), ts))
        for _ in range(draw(st.integers(0, 3))):
            when = ts + draw(st.sampled_from([-7200, -60, -1, 0, 30, 3600, 3 * 86400]))
            label = draw(st.integers(0, 1))
            raws.append(outcome(f"id{i}", label, when))
            old = truth.get(f"id{i}")
            if old is None or (when, label) > (old[1], old[2]):
                truth[f"id{i}"] = (ts, when, label)
    order = draw(st.permutations(range(len(raws))))
    cuts = draw(st.lists(st.integers(0, len(raws)), max_size=4))
    return [raws[k] for k in order], sorted(set(cuts)), truth


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(skewed_streams())
def test_delay_histogram_holds_the_non_negative_delays_of_the_outcomes_in_force_in_any_order(stream):
    raws, cuts, truth = stream
    ok = [(d, 0) for d in decoded(raws)]
    store, s = JoinStore(), EngineSettings()
    for a, b in zip([0, *cuts], [*cuts, len(ok)]):
        if b > a:
            batch = ok[a:b]
            store.commit(_batched(s, store.load({d.event.prediction_id for d, _ in batch}), batch))
    got = sum((b.delay for b in store.buckets.values()), np.zeros(N_DELAY_BINS, dtype=np.int64))
    delays = np.array([o - p for p, o, _ in truth.values() if o >= p], dtype=np.float64)
    want = np.bincount(delay_bin(delays), minlength=N_DELAY_BINS) if len(delays) else np.zeros(N_DELAY_BINS)
    assert got.tolist() == want.tolist()
    labels = Counter(lab for _, _, lab in truth.values())
    conf = sum(b.conf for b in store.buckets.values())
    assert (int(conf[1].sum()), int(conf[0].sum())) == (labels[1], labels[0])  # every label still counts
    if any(o < p for p, o, _ in truth.values()):
        assert store.counters[("outcome_before_prediction", "")] >= 1


def _skewed_file(path: Path) -> Path:
    """400 predictions 10 minutes apart; outcomes 3 days later for even ids, one hour before for odd ones."""
    rnd = random.Random(7)
    lines = []
    for i in range(400):
        ts = T0 + i * 600
        score = rnd.random()
        lines.append(pred(f"p{i}", score, ts).decode())
        lines.append(outcome(f"p{i}", int(score > 0.7), ts + (3 * DAY if i % 2 == 0 else -3600)).decode())
    path.write_text("\n".join(lines) + "\n")
    return path


def test_replay_metrics_and_exporter_tell_the_early_outcomes_apart(tmp_path, capsys):
    events = _skewed_file(tmp_path / "skewed.jsonl")
    url = f"sqlite:///{tmp_path / 'skewed.db'}"
    summary = cli_json(capsys, "--db", url, "replay", "--json", str(events))
    assert summary["outcome_before_prediction"] == 200
    assert summary["outcomes"] == 400
    doc = cli_json(capsys, "--db", url, "metrics", "--json", "--window", "30d", "--at", str(T0 + 10 * DAY))
    assert doc["counts"]["labelled"] == 400  # every early outcome's label counts
    delay = doc["label_delay_seconds"]
    assert 2.5 * DAY < delay["p50"] < 3.5 * DAY  # 60 s before: the early half sat in the first bin
    store = Store(url)
    svc = Service(Config(), store, clock=lambda: T0 + 10 * DAY, port=0, evaluate=False)
    svc.start()
    try:
        with urllib.request.urlopen(svc.url + "/metrics", timeout=60) as r:
            text = r.read().decode()
    finally:
        svc.stop()
    values = {s.name: s.value for fam in text_string_to_metric_families(text) for s in fam.samples}
    assert values["driftline_outcomes_before_prediction_total"] == 200


def test_the_replay_table_names_the_count(tmp_path, capsys):
    events = _skewed_file(tmp_path / "skewed.jsonl")
    assert main(["--db", f"sqlite:///{tmp_path / 'd.db'}", "replay", str(events)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "outcome before prediction" in x)
    assert "200" in line
    assert "stamped before their prediction" in out
