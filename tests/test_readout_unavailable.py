"""A readout the exporter cannot compute says why on /metrics (driftline_readout_unavailable{readout, reason} 1).
On-call tryout: after an upgrade whose reference predates labels or feature samples, the scrape had no
driftline_estimated_*_ratio and no driftline_multivariate_drift_* series, only `driftline_estimated_trusted 0`, so a
Grafana panel went blank with no reason while `driftline calibration`/`drift` explained it. The reason is one of the
fixed codes of readouts.absent.REASONS (bounded label values)."""

from __future__ import annotations

import json

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, text

from driftline.cli import main
from driftline.config import from_dict
from driftline.exporter.collector import SnapshotCollector
from driftline.readouts.absent import READOUTS, REASONS
from driftline.storage.store import Store
from driftline.triggers.drift_hook import default_provider

from helpers import simulated_db

END = "2026-11-30T00:00:00Z"
REF = ("--from", "2026-11-24T00:00:00Z", "--to", "2026-11-27T00:00:00Z")
LAB = {"model": "fraud", "window": "7d"}


@pytest.fixture
def db(tmp_path) -> list[str]:
    db = simulated_db(tmp_path, END)
    return db


def _scrape(url: str, at: float | None = None, window: str = "7d") -> CollectorRegistry:
    """A registry over the database: windows end at the newest prediction, or at `at` (wall basis)."""
    from driftline.readouts import drift  # profiles are cached per process by id and creation time
    drift._profiles.clear()
    store = Store(url)
    reg = CollectorRegistry()
    basis = {"time_basis": "event"} if at is None else {"time_basis": "wall", "clock": lambda: at}
    reg.register(SnapshotCollector(store, from_dict({"model": "fraud", "window": window}), drift=default_provider(),
                                   cache_s=0.0, **basis))
    return reg


def _unavailable(reg: CollectorRegistry) -> dict[str, str]:
    """readout -> reason of the scrape's driftline_readout_unavailable series (each exactly 1)."""
    out = {}
    for fam in reg.collect():
        for s in fam.samples:
            if s.name == "driftline_readout_unavailable":
                assert s.value == 1.0 and s.labels["model"] == "fraud"
                assert s.labels["readout"] in READOUTS and s.labels["reason"] in REASONS
                assert s.labels["readout"] not in out  # one reason per readout
                out[s.labels["readout"]] = s.labels["reason"]
    return out


def _sql(url: str, statement: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(statement))
    engine.dispose()


def test_without_a_reference_both_readouts_say_so(db) -> None:
    assert _unavailable(_scrape(db[1])) == {"estimated": "no_reference", "multivariate": "no_reference"}


def test_a_reference_set_by_this_version_exports_both_readouts_and_no_reason(db) -> None:
    assert main([*db, "reference", "set", *REF]) == 0
    reg = _scrape(db[1])
    assert _unavailable(reg) == {}
    assert reg.get_sample_value("driftline_estimated_recall_ratio", LAB) is not None
    assert reg.get_sample_value("driftline_multivariate_drift_ratio", LAB) is not None


def test_a_reference_from_before_labels_and_samples_says_why_after_the_upgrade(db) -> None:
    assert main([*db, "reference", "set", *REF]) == 0
    engine = create_engine(db[1])
    with engine.begin() as conn:  # as stored by a driftline before calibrated estimates and multivariate drift
        for ref_id, profile in conn.execute(text("SELECT id, profile FROM reference_profiles")).all():
            doc = json.loads(profile)
            doc.pop("score_labels"), doc.pop("score_labels_by_variant")
            conn.execute(text("UPDATE reference_profiles SET profile = :p WHERE id = :i"),
                         {"p": json.dumps(doc), "i": ref_id})
        conn.execute(text("DELETE FROM reference_samples"))
    engine.dispose()
    reg = _scrape(db[1])
    assert reg.get_sample_value("driftline_estimated_trusted", LAB) == 0.0
    assert reg.get_sample_value("driftline_estimated_recall_ratio", LAB) is None
    assert reg.get_sample_value("driftline_multivariate_drift_ratio", LAB) is None
    assert _unavailable(reg) == {"estimated": "reference_predates_labels",
                                 "multivariate": "reference_predates_samples"}


UPGRADE = 1795737600.0  # 2026-11-27: buckets before it were stored before 0009_mvsample (no feature samples)


def test_a_reference_over_buckets_stored_before_feature_samples_names_them(db) -> None:
    _sql(db[1], f"DELETE FROM feature_samples WHERE bucket_start < {UPGRADE:.0f}")
    assert main([*db, "reference", "set", "--from", "2026-11-24T00:00:00Z", "--to", "2026-11-26T00:00:00Z"]) == 0
    assert _unavailable(_scrape(db[1])) == {"multivariate": "reference_unsampled"}


def test_a_window_stored_before_feature_samples_fills_up_on_its_own(db) -> None:
    _sql(db[1], f"DELETE FROM feature_samples WHERE bucket_start < {UPGRADE:.0f}")
    assert main([*db, "reference", "set", "--from", "2026-11-27T00:00:00Z", "--to", "2026-11-29T00:00:00Z"]) == 0
    assert _unavailable(_scrape(db[1], at=UPGRADE, window="1d")) == {"multivariate": "window_unsampled"}
    assert _unavailable(_scrape(db[1], at=UPGRADE + 2 * 86400, window="1d")) == {}
