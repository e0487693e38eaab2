"""A negative-reading trigger whose window is no longer than `labels.implicit_negative_after` is named at
validate, evaluate and service start.

Churn tryout: negatives were implicit after 60 days; `fpr > 0.2 over 50d` read insufficient_data for ever and
`precision < 0.5 over 50d` read 1.000 (every false alarm still unlabelled), while `alerts validate` said nothing.
Here the fraud-like case the label-delay warning cannot see: positives reported 2 days later (median delay well
inside the window), negatives implicit after 30 days.
"""

from __future__ import annotations

import json

import yaml

from driftline import cli
from driftline.config import from_dict
from driftline.storage.store import Store
from driftline.triggers import runner
from driftline.triggers.unseen import unseen_names

from helpers import outcome, pred

DAY = 86400.0
START = 1_780_272_000.0  # 2026-06-01T00:00:00Z
HOURS = 60 * 24
END = START + HOURS * 3600  # 2026-07-31T00:00:00Z, the evaluation time

FPR_7D = {"name": "fpr_7d", "metric": "fpr", "op": ">", "value": 0.2, "window": "7d"}
PRECISION_7D = {"name": "precision_7d", "metric": "precision", "op": "<", "value": 0.5, "window": "7d"}
RECALL_7D = {"name": "recall_7d", "metric": "recall", "op": "<", "value": 0.5, "window": "7d"}
FPR_37D = {"name": "fpr_37d", "metric": "fpr", "op": ">", "value": 0.2, "window": "37d"}
IMPLICIT_30D = {"policy": "implicit_negative_after", "implicit_negative_after": "30d", "horizon": "90d"}


def _score(i: int) -> float:
    """Every 4th prediction is a positive (0.7); of the negatives every 3rd is a false alarm (0.4 >= 0.3)."""
    return 0.7 if i % 4 == 0 else (0.4 if i % 3 == 0 else 0.2)


def _base(tmp_path, labels: dict, triggers: list[dict], replay: bool = True) -> list[str]:
    lines = []
    for i in range(HOURS):
        ts = START + i * 3600
        lines.append(pred(f"c{i}", _score(i), ts, model="churn"))
        if i % 4 == 0 and ts + 2 * DAY < END:  # labels after the stream's end are not stored yet
            lines.append(outcome(f"c{i}", 1, ts + 2 * DAY))
    lines.sort(key=lambda raw: json.loads(raw)["ts"])
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"model": "churn", "threshold": 0.3, "labels": labels, "triggers": triggers}))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    if not replay:  # an empty database
        path.write_bytes(b"")
    assert cli.main([*base, "replay", str(path), "--json"]) == 0
    return base


def _said(capsys) -> str:
    return " ".join(capsys.readouterr().err.split())


def test_validate_and_evaluate_name_an_fpr_window_shorter_than_the_implicit_maturity(tmp_path, capsys) -> None:
    base = _base(tmp_path, IMPLICIT_30D, [FPR_7D, PRECISION_7D, RECALL_7D, FPR_37D])
    capsys.readouterr()
    assert cli.main([*base, "alerts", "validate"]) == 1
    err = _said(capsys)
    # 30d maturity + the 7d window (the 2-day label delay is shorter than the maturity)
    assert ("trigger 'fpr_7d': fpr over the newest 7d reads labelled negatives, but under `labels.policy: "
            "implicit_negative_after` a prediction of model 'churn' without an outcome counts as negative only 30d "
            "after it") in err
    assert "A window longer than the maturity (`window: 37d`) holds 7d of matured predictions" in err
    assert "trigger 'precision_7d'" in err and "a window's matured part" in err and "stays insufficient_data" in err
    assert "recall_7d" not in err and "fpr_37d" not in err  # recall reads positives; 37d > 30d holds negatives
    assert cli.main([*base, "alerts", "evaluate", "--dry-run", "--no-notify", "--at", "2026-07-31T00:00:00Z",
                     "--json"]) == 0
    out = capsys.readouterr()
    assert "trigger 'fpr_7d': fpr over the newest 7d reads labelled negatives" in " ".join(out.err.split())
    states = {t["name"]: t["state"] for t in json.loads(out.out)["triggers"]}
    # what the warning is about: the newest 7 days hold no negative at all; precision read 1 over its early
    # positives alone, and now reads the window's matured part, empty (tests/test_matured_part.py)
    assert states["fpr_7d"]["state"] == "insufficient_data" and states["fpr_7d"]["n"] == 0
    assert states["precision_7d"]["state"] == "insufficient_data" and states["precision_7d"]["n"] == 0
    # the suggested 37d window holds the negatives of its oldest 7 days, by hand: the newest event is the last
    # prediction (END - 1h), so predictions before END - 1h - 30d are implicit negatives
    old = [i for i in range(HOURS) if END - 37 * DAY <= START + i * 3600 < END - 3600 - 30 * DAY and i % 4]
    assert states["fpr_37d"]["n"] == len(old) == 125  # 167 hours, 42 of them positives
    assert states["fpr_37d"]["value"] == sum(_score(i) >= 0.3 for i in old) / len(old)


def test_the_service_start_check_names_it_too(tmp_path) -> None:
    base = _base(tmp_path, IMPLICIT_30D, [FPR_7D])
    config = from_dict({"model": "churn", "threshold": 0.3, "labels": IMPLICIT_30D, "triggers": [FPR_7D]})
    store = Store(base[3])
    try:
        lines = unseen_names(store, config, "churn", runner.compile_rules(config.triggers))  # process.start_jobs
    finally:
        store.close()
    assert len(lines) == 1 and lines[0].startswith("trigger 'fpr_7d': fpr over the newest 7d reads labelled")


def test_it_is_said_before_any_data_is_stored(tmp_path, capsys) -> None:
    base = _base(tmp_path, IMPLICIT_30D, [FPR_7D], replay=False)
    assert cli.main([*base, "alerts", "validate"]) == 1
    assert "trigger 'fpr_7d': fpr over the newest 7d reads labelled negatives" in _said(capsys)


def test_no_warning_under_the_explicit_policy(tmp_path, capsys) -> None:
    base = _base(tmp_path, {"horizon": "90d"}, [FPR_7D, PRECISION_7D])
    capsys.readouterr()
    assert cli.main([*base, "alerts", "validate"]) == 0
    assert "reads labelled negatives" not in _said(capsys)
