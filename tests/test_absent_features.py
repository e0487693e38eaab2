"""Issue 15 part 2: a tracked feature whose key is absent counts as missing, declared or inferred, same verdict.

300 reference events carry feature `d`; of 300 current events 40 % lack the key (or, second case, all of them).
Without `features:` in the config `d` is inferred; with `features: {d: numeric}` it is declared. The drift
documents of both must agree: missing share 0.40 (1.0), the same PSI, drifted.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from driftline.analysis.drift import drift_report
from driftline.analysis.profiles import build_profile_from_stats
from driftline.cli import main
from driftline.core.events import iso

from helpers import MemoryState, pred

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
HOUR = 3600.0


def _stream(absent_share: float) -> bytes:
    rng = np.random.default_rng(5)
    lines = []
    for i in range(300):  # reference: hours 0-4, every event has d (and `other`, always present)
        lines.append(pred(f"r{i}", 0.3, T0 + i * 60, features={"d": float(rng.normal(10, 2)), "other": float(i)}))
    for i in range(300):  # current: hours 10-14, the first `absent_share` of them lack d
        feats = {"other": float(i)}
        if i >= absent_share * 300:
            feats["d"] = float(rng.normal(10, 2))
        lines.append(pred(f"c{i}", 0.3, T0 + 10 * HOUR + i * 60, features=feats))
    return b"\n".join(lines) + b"\n"


def _drift_of_d(tmp_path, capsys, absent_share: float, declared: bool) -> dict:
    tag = f"{absent_share}-{declared}"
    events = tmp_path / f"e{tag}.jsonl"
    events.write_bytes(_stream(absent_share))
    cfg = tmp_path / f"c{tag}.yaml"
    cfg.write_text(yaml.safe_dump({"features": {"d": "numeric", "other": "numeric"}} if declared else {}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / f'd{tag}.db'}"]
    assert main([*base, "replay", str(events), "--json"]) == 0
    assert main([*base, "reference", "set", "--from", iso(T0), "--to", iso(T0 + 5 * HOUR)]) == 0
    capsys.readouterr()
    assert main([*base, "drift", "--window", "5h", "--at", iso(T0 + 15 * HOUR), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["window"]["n"] == 300
    return next(f for f in doc["features"] if f["feature"] == "d")


@pytest.mark.parametrize("absent_share", [0.4, 1.0])
def test_an_absent_key_is_missing_whether_declared_or_inferred(tmp_path, capsys, absent_share) -> None:
    declared = _drift_of_d(tmp_path, capsys, absent_share, True)
    inferred = _drift_of_d(tmp_path, capsys, absent_share, False)
    for f in (declared, inferred):
        assert f["missing_share"]["reference"] == 0.0
        assert f["missing_share"]["current"] == pytest.approx(absent_share)
        assert f["drifted"] is True and f["severity"] == "alert"
    assert inferred["psi"] == pytest.approx(declared["psi"], rel=1e-12)
    assert inferred["js"] == pytest.approx(declared["js"], rel=1e-12)
    assert inferred["missing_share"] == declared["missing_share"]
    assert declared["psi"] > 3.0  # the issue measured 3.63 on its own 40 % sample


def test_a_reference_counts_absent_keys_as_missing_too() -> None:
    """An inferred feature absent from part of the reference gets that share as its reference missing share."""
    s = MemoryState()
    s.apply([pred(f"a{i}", 0.3, T0 + i, features=({"d": 1.0} if i % 4 else {})) for i in range(400)])
    stats = s.total()
    profile = build_profile_from_stats(stats)
    d = profile.feature("d")
    assert d is not None and d.fine.missing == 100 and d.n == 400
    result = drift_report(profile, stats.features, stats.hist, stats.conf)
    assert next(f for f in result.features if f.feature == "d").drifted is False  # a window equal to its reference
