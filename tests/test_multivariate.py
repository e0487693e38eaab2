"""Multivariate drift (issue 19 part 2): per-bucket feature samples by id hash (order- and partition-free,
bounded), the PCA reconstruction error against scikit-learn, its permutation p-value against scipy, its
false-alarm rate on calm data by simulation, and the acceptance case: a flipped correlation with unchanged
marginals is flagged by the multivariate statistic only, through `drift --json`, the exporter, a trigger
(rendered rule checked by promtool) and the weekly report."""

from __future__ import annotations

import json
import random
import subprocess

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.decomposition import PCA
from sqlalchemy import select

from driftline.analysis.multivariate import (encode, fit_encoding, multivariate_drift, permutation_p,
                                             principal_components, reconstruction_errors)
from driftline.cli import main
from driftline.config import ConfigError, from_dict, load
from driftline.core.sample import MAX_TAU, encode_sample, id_hash, merge_encoded, merge_samples, sample_of
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage.samples import bucket_samples, compact_samples, feature_samples, window_sample
from driftline.storage.store import Store

from cli_helpers import cli_json, replay_through_cli
from helpers import pred
from services import require_binary

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z (a Thursday)
HOUR = 3600.0


# --- samples -------------------------------------------------------------------------------------------
def _raws(n: int, seed: int = 1) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [pred(f"tx-{i}", 0.3, START + float(rng.uniform(0, 3 * HOUR)),
                 features={"a": float(rng.normal()), "c": str(rng.choice(["x", "y"])), "flag": bool(i % 2)})
            for i in range(n)]


def _stored(store: Store) -> list[tuple]:
    with store.read() as conn:
        return sorted(tuple(r) for r in conn.execute(select(feature_samples)))


def test_samples_are_identical_whatever_the_order_and_partitioning(tmp_path) -> None:
    """The same events in two orders, in batches of different sizes and across two partitions give byte-identical
    stored samples, and each bucket's sample is exactly its k smallest id hashes (brute force)."""
    config = from_dict({"drift": {"sample_k": 16}})
    raws = _raws(600)
    one = Store(f"sqlite:///{tmp_path / 'one.db'}")
    one.migrate()
    Pipeline(config, one, clock=lambda: START + 1e6).process_batch([RawRecord("a", 0, i, r) for i, r in enumerate(raws)])
    shuffled = list(enumerate(raws))
    random.Random(5).shuffle(shuffled)
    two = Store(f"sqlite:///{tmp_path / 'two.db'}")
    two.migrate()
    pipe = Pipeline(config, two, clock=lambda: START + 1e6)
    for lo in range(0, len(shuffled), 77):
        part = shuffled[lo:lo + 77]
        pipe.process_batch([RawRecord("b", j % 2, j, r) for j, r in part], shard_of=lambda r: r.partition)
    pipe.process_batch([RawRecord("c", 0, 0, raws[3])])  # a duplicate changes nothing
    assert _stored(one) == _stored(two) and len(_stored(one)) == 3
    by_bucket: dict[float, list[int]] = {}
    for i, r in enumerate(raws):
        ts = json.loads(r)["ts"]
        by_bucket.setdefault(ts // HOUR * HOUR, []).append(id_hash(f"tx-{i}"))
    for (_, _, _, start), s in bucket_samples(one, "fraud", START, START + 3 * HOUR):
        want = sorted(by_bucket[start])[:16]
        assert list(s.hashes) == want and s.tau == want[-1] and len(s) == 16
        assert all(set(row) == {"a", "c", "flag"} and row["flag"] in ("true", "false") for row in s.rows)
    one.close()
    two.close()


def test_split_batches_store_the_same_samples_on_postgresql_as_on_sqlite(tmp_path, pg_url) -> None:
    """The batch merge of samples (one read and two executemany statements per few hundred buckets) stores the
    same bytes on both databases, whether a batch finds a bucket's row absent, changed by the merge or unchanged."""
    config = from_dict({"drift": {"sample_k": 16}})
    raws = _raws(600, seed=3)
    stored = []
    for url in (f"sqlite:///{tmp_path / 'lite.db'}", pg_url):
        store = Store(url)
        store.migrate()
        pipe = Pipeline(config, store, clock=lambda: START + 1e6)
        for lo in range(0, len(raws), 91):
            pipe.process_batch([RawRecord("a", 0, i, raws[i]) for i in range(lo, min(lo + 91, len(raws)))])
        pipe.process_batch([RawRecord("b", 0, 0, raws[5])])  # a duplicate: every row unchanged
        stored.append([(m, v, var, int(b), span, bytes(d)) for m, v, var, b, span, d in _stored(store)])
        store.close()
    assert stored[0] == stored[1] and len(stored[0]) == 3


def test_a_sample_row_inserted_meanwhile_on_postgresql_is_merged_into_not_refused(pg_url, monkeypatch) -> None:
    """A bucket's sample row that another transaction inserts between the batch's read and its insert (the write
    lock rules that out, but a missing row cannot be row-locked) is read again and merged into: the stored sample
    is the union of both, where a plain insert failed with a unique violation and lost the batch."""
    import driftline.storage.samples as samples_mod
    from driftline.storage.samples import merge_into

    store = Store(pg_url)
    store.migrate()
    key = ("fraud", "v1", "A", int(START))
    theirs = sample_of([(11, {"a": "1"}), (40, {"a": "4"})], 3)
    ours = sample_of([(7, {"a": "0"}), (25, {"a": "2"})], 3)
    real_stored = samples_mod._stored
    calls: list[int] = []

    def stored_then_another_writer_inserts(conn, dialect, keys):
        found = real_stored(conn, dialect, keys)
        if not calls:
            with store.engine.begin() as other:  # no write lock: a writer that got in between
                other.execute(feature_samples.insert().values(model=key[0], model_version=key[1], variant=key[2],
                                                              bucket_start=key[3], span=3600,
                                                              data=encode_sample(theirs)))
        calls.append(len(found))
        return found

    monkeypatch.setattr(samples_mod, "_stored", stored_then_another_writer_inserts)
    with store.write() as conn:
        merge_into(conn, {key: ours}, 3, 3600)
    assert calls == [0, 1]
    (_, got), = bucket_samples(store, "fraud", START, START + HOUR)
    assert got == merge_samples((theirs, ours), 3) and list(got.hashes) == [7, 11, 25]
    store.close()


def test_compaction_keeps_k_rows_a_day_and_the_same_window_sample(tmp_path) -> None:
    """Day compaction of old samples: one row per day, and a whole-day window's sample (up to k rows) unchanged;
    a window cutting the compacted day leaves it out; a late write into the day merges with it."""
    config = from_dict({"drift": {"sample_k": 16}})
    store = Store(f"sqlite:///{tmp_path / 'c.db'}")
    store.migrate()
    pipe = Pipeline(config, store, clock=lambda: START + 1e6)
    pipe.process_batch([RawRecord("a", 0, i, r) for i, r in enumerate(_raws(600))])
    before = window_sample(store, "fraud", START, START + 86400, 16)
    assert compact_samples(store, START + 86400, 16) == 1 and compact_samples(store, START + 86400, 16) == 0
    assert len(_stored(store)) == 1
    assert window_sample(store, "fraud", START, START + 86400, 16) == before
    assert len(window_sample(store, "fraud", START, START + 2 * HOUR, 16)) == 0
    late = pred("late", 0.2, START + 30, features={"a": 1.0})
    pipe.process_batch([RawRecord("a", 0, 999, late)])
    after = window_sample(store, "fraud", START, START + 86400, 16)
    assert after == merge_samples([before, sample_of([(id_hash("late"), {"a": 1.0})], 16)], 16)
    store.close()


def test_the_scheduled_compaction_job_compacts_samples(tmp_path) -> None:
    from driftline.service.scheduler import Jobs

    config = from_dict({"drift": {"sample_k": 16}, "labels": {"horizon": "1d"}})
    store = Store(f"sqlite:///{tmp_path / 'j.db'}")
    store.migrate()
    now = START + 3.5 * 86400
    raws = [*_raws(300), pred("newest", 0.5, now - 60, features={"a": 0.0})]
    Pipeline(config, store, clock=lambda: now).process_batch([RawRecord("a", 0, i, r) for i, r in enumerate(raws)])
    assert len(_stored(store)) == 4
    jobs = Jobs(store, config, lambda: now, report_dir=str(tmp_path))
    jobs.maintain()  # expiry first, as the hourly job does: compaction never merges a day predictions still wait in
    out = jobs.compact()
    assert out.detail["sample_days"] == 1 and [(r[3], r[4]) for r in _stored(store)] == [
        (START, 86400), (now - 60 - (now - 60) % 3600, 3600)]
    store.close()


def test_merge_of_samples_equals_the_sample_of_the_union() -> None:
    """Associative and commutative: any grouping of any partition of the items gives the one-shot sample."""
    rng = random.Random(2)
    items = [(id_hash(f"p{i}"), {"v": float(i)}) for i in range(3000)]
    whole = sample_of(items, 100)
    for _ in range(5):
        rng.shuffle(items)
        cuts = sorted(rng.sample(range(1, len(items)), 6))
        parts = [sample_of(items[a:b], 100) for a, b in zip([0, *cuts], [*cuts, len(items)])]
        rng.shuffle(parts)
        assert merge_samples([merge_samples(parts[:3], 100), merge_samples(parts[3:], 100)], 100) == whole
        assert merge_encoded([encode_sample(p) for p in parts], 100) == whole  # the stored-bytes path
    small = sample_of(items[:50], 100)
    assert small.tau == MAX_TAU and len(small) == 50  # not truncated: every item kept


# --- the statistic against reference implementations ---------------------------------------------------
def _rows(x: np.ndarray, names=("x1", "x2", "x3", "x4")) -> list[dict]:
    return [{n: float(v) for n, v in zip(names, r)} for r in x]


def test_reconstruction_error_matches_sklearn_pca() -> None:
    rng = np.random.default_rng(0)
    cov = np.array([[1, .8, .1, 0], [.8, 1, 0, .2], [.1, 0, 1, .3], [0, .2, .3, 1]])
    fit, other = rng.multivariate_normal(np.zeros(4), cov, 800), rng.multivariate_normal(np.ones(4), cov, 300)
    feats = [(f"x{i}", "numeric") for i in range(1, 5)]
    enc = fit_encoding(_rows(fit), feats)
    zf, zo = encode(_rows(fit), enc), encode(_rows(other), enc)
    np.testing.assert_allclose(zf, (fit - fit.mean(0)) / fit.std(0), atol=1e-12)
    comps, ratio = principal_components(zf, 0.65)
    ref = PCA().fit(zf)
    np.testing.assert_allclose(ratio, ref.explained_variance_ratio_, rtol=1e-10)
    d = int(np.argmax(np.cumsum(ref.explained_variance_ratio_) >= 0.65)) + 1
    assert len(comps) == d
    sk = PCA(n_components=d).fit(zf)
    want = np.linalg.norm(zo - sk.inverse_transform(sk.transform(zo)), axis=1)
    np.testing.assert_allclose(reconstruction_errors(zo, comps, zf.mean(0)), want, rtol=1e-9, atol=1e-12)


def test_permutation_p_value_matches_scipy() -> None:
    rng = np.random.default_rng(1)
    for shift in (0.0, 0.15):
        a, b = rng.gamma(2.0, size=300), rng.gamma(2.0, size=200) + shift
        p, diff = permutation_p(a, b, 9999, seed=3)
        ref = sps.permutation_test((b, a), lambda x, y: np.mean(x) - np.mean(y), n_resamples=9999,
                                   alternative="two-sided", random_state=4)
        assert diff == pytest.approx(b.mean() - a.mean())
        assert abs(p - ref.pvalue) < 0.02  # two Monte Carlo estimates of one p (each within ±0.01)


def _sample(rng, n: int, rho: float) -> list[dict]:
    x = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], n)
    other = rng.normal(size=(n, 2))
    cats = rng.choice(["a", "b", "c"], n)
    return [{"x1": float(r[0]), "x2": float(r[1]), "x3": float(o[0]), "x4": float(o[1]), "c": str(c)}
            for r, o, c in zip(x, other, cats)]


FEATURES = [("x1", "numeric"), ("x2", "numeric"), ("x3", "numeric"), ("x4", "numeric"), ("c", "categorical")]


def test_false_alarm_rate_on_calm_data_is_at_most_alpha_and_a_flip_is_caught() -> None:
    """300 calm windows at alpha = 0.05: flagged ≤ 0.05 + 3 binomial standard errors; 30 flipped ones: all."""
    rng = np.random.default_rng(11)
    alpha, trials = 0.05, 300
    calm = sum(bool(multivariate_drift(_sample(rng, 400, 0.8), _sample(rng, 200, 0.8), FEATURES, alpha,
                                       permutations=199, seed=t).drifted) for t in range(trials))
    assert calm / trials <= alpha + 3 * (alpha * (1 - alpha) / trials) ** 0.5, calm
    flipped = [multivariate_drift(_sample(rng, 400, 0.8), _sample(rng, 200, -0.8), FEATURES, alpha,
                                  permutations=199) for _ in range(30)]
    assert all(r.drifted for r in flipped) and min(r.ratio for r in flipped) > 1.2


def test_missing_values_are_imputed_and_small_samples_give_no_verdict() -> None:
    rng = np.random.default_rng(4)
    ref = _sample(rng, 400, 0.5)
    for row in ref[::7]:
        del row["x1"]  # missing: imputed with the fit half's mean
    r = multivariate_drift(ref, _sample(rng, 300, 0.5), FEATURES, 0.01)
    assert r.drifted is not None and r.n_window == 300 and "c=a" in r.columns
    few = multivariate_drift(ref, _sample(rng, 20, 0.5), FEATURES, 0.01)
    assert few.drifted is None and few.p_value is None and "fewer than" in few.note


# --- acceptance: end to end ----------------------------------------------------------------------------
CONFIG = """
model: fraud
features: {x1: numeric, x2: numeric, x3: numeric, c: categorical}
triggers:
  - {name: relations_changed, metric: multivariate_drifted, op: ">", value: 0, window: 2d, min_n: 100}
  - {name: relations_ratio, metric: multivariate_drift, op: ">", value: 1.5, window: 2d, min_n: 100}
"""


def _write_events(path, rng, start: float, hours: int, per_hour: int, rho: float, prefix: str) -> None:
    with open(path, "a") as fh:
        for h in range(hours):
            for i in range(per_hour):
                x = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]])
                feats = {"x1": float(x[0]), "x2": float(x[1]), "x3": float(rng.normal()),
                         "c": str(rng.choice(["a", "b", "c"]))}
                fh.write(json.dumps({"type": "prediction", "prediction_id": f"{prefix}-{h}-{i}", "model": "fraud",
                                     "ts": start + h * HOUR + i * HOUR / per_hour, "score": float(rng.uniform()),
                                     "features": feats}) + "\n")


@pytest.fixture(scope="module")
def flipped(tmp_path_factory):
    d = tmp_path_factory.mktemp("mv")
    rng = np.random.default_rng(7)
    events = d / "events.jsonl"
    _write_events(events, rng, START, 96, 100, 0.8, "ref")           # days 0-3: reference
    _write_events(events, rng, START + 96 * HOUR, 48, 100, 0.8, "calm")    # days 4-5: calm
    _write_events(events, rng, START + 144 * HOUR, 48, 100, -0.8, "flip")  # days 6-7: correlation flipped
    base, url, cfg = replay_through_cli(d, CONFIG, events, "mv.db")
    assert main([*base, "reference", "set", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-05T00:00:00Z"]) == 0
    store = Store(url)
    yield {"base": base, "store": store, "config": load(cfg), "dir": d, "events": events}
    store.close()


def _drift(capsys, base, at: str) -> dict:
    return cli_json(capsys, *base, "drift", "--json", "--window", "2d", "--at", at)


def test_flipped_correlation_is_flagged_by_the_multivariate_statistic_only(flipped, capsys) -> None:
    calm = _drift(capsys, flipped["base"], "2026-01-07T00:00:00Z")
    flip = _drift(capsys, flipped["base"], "2026-01-09T00:00:00Z")
    for doc in (calm, flip):
        assert doc["drifted"] == [] and not any(f["drifted"] for f in doc["features"])  # marginals unchanged
        assert doc["multivariate"]["n"] == {"window": 2000, "reference_fit": 2000, "reference_calibration": 2000}
    assert calm["multivariate"]["drifted"] is False and calm["multivariate"]["p_value"] > 0.01
    mv = flip["multivariate"]
    assert mv["drifted"] is True and mv["p_value"] == 0.001 and mv["ratio"] > 1.5
    assert mv["method"] == "pca_reconstruction" and {"x1", "x2", "x3", "c=a"} <= set(mv["columns"])
    capsys.readouterr()
    assert main([*flipped["base"], "drift", "--window", "2d", "--at", "2026-01-09T00:00:00Z"]) == 0
    assert "multivariate (PCA reconstruction error" in capsys.readouterr().out


def test_reference_from_a_file_freezes_the_same_sample(flipped, capsys) -> None:
    """`reference set --file` samples the file's predictions exactly as ingestion sampled the stored buckets."""
    base = flipped["base"]
    before = _drift(capsys, base, "2026-01-09T00:00:00Z")["multivariate"]
    assert main([*base, "reference", "set", "--file", str(flipped["events"]), "--from", "2026-01-01T00:00:00Z",
                 "--to", "2026-01-05T00:00:00Z"]) == 0
    after = _drift(capsys, base, "2026-01-09T00:00:00Z")["multivariate"]
    assert after == before


def test_exporter_trigger_and_rendered_rule(flipped, tmp_path) -> None:
    from driftline.exporter.collector import SnapshotCollector
    from driftline.triggers import runner
    from driftline.triggers.drift_hook import default_provider
    from driftline.triggers.rules import render_rules, to_yaml

    store, cfg = flipped["store"], flipped["config"]
    end = START + 192 * HOUR
    col = SnapshotCollector(store, cfg, clock=lambda: end, cache_s=0.0, drift=default_provider())
    fams = {m.name: m for m in col.collect()}
    s = {x.labels["window"]: x.value for x in fams["driftline_multivariate_drift_drifted"].samples}
    assert s["2d"] == 1.0 and "7d" in s
    rows = {x.labels["window"]: x.value for x in fams["driftline_multivariate_drift_sample_rows"].samples}
    assert rows["2d"] == 2000.0
    assert fams["driftline_multivariate_drift_ratio"].samples[0].labels.keys() == {"model", "window"}
    calm = runner.run(store, cfg, now=START + 144 * HOUR, drift=default_provider(), persist=False).states
    assert [x.value for x in calm][0] == 0.0 and [x.state for x in calm] == ["ok", "ok"]
    hot = runner.run(store, cfg, now=end, drift=default_provider(), persist=False).states
    assert hot[0].value == 1.0 and hot[0].state == "firing" and hot[1].value > 1.5
    text = to_yaml(render_rules(cfg))
    assert ('driftline_multivariate_drift_drifted{model="fraud", window="2d"} > 0' in text
            and 'driftline_multivariate_drift_sample_rows{model="fraud", window="2d"} >= 100' in text)
    path = tmp_path / "mv.rules.yml"
    path.write_text(text)
    res = subprocess.run([require_binary("promtool"), "check", "rules", str(path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_multivariate_trigger_config_is_validated() -> None:
    with pytest.raises((ConfigError, ValueError), match="judges all features together"):
        from_dict({"triggers": [{"name": "t", "metric": "multivariate_drifted", "feature": "x1", "op": ">",
                                 "value": 0}]})
    with pytest.raises((ConfigError, ValueError), match="multivariate_drift"):
        from_dict({"triggers": [{"name": "t", "metric": "multivariate_drif", "op": ">", "value": 0}]})
    with pytest.raises((ConfigError, ValueError), match="sample_k"):
        from_dict({"drift": {"sample_k": 8}})


def test_weekly_report_shows_the_multivariate_verdict(flipped, capsys) -> None:
    out = flipped["dir"] / "reports"
    assert main([*flipped["base"], "report", "--week", "2026-W02", "--out", str(out)]) == 0
    md = next(out.glob("*.md")).read_text()
    assert "Multivariate (PCA reconstruction error" in md and ": drifted;" in md
    assert "Multivariate (PCA reconstruction error" in next(out.glob("*.html")).read_text()
    doc = json.loads(next(out.glob("*.json")).read_text())
    assert doc["drift"]["document"]["multivariate"]["drifted"] is True
