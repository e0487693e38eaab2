"""A shadow arm takes no share of the traffic: under `ab.design: shadow` a share is the fraction of the predictions
an arm scores (1: every one), so `arms: {A: 1, S: 1}` loads; a shadow arm listed at 1 beside a split is refused with
a message naming the field, the rule and the config that reads it.

Churn tryout: the README's A/B config plus a shadow arm (`arms: {A: 0.5, B: 0.5, S: 1.0}`, or `design: shadow`
with `arms: {A: 1, S: 1}`) was refused as "the expected shares sum to 2 ...; they must sum to 1", though the shadow
arm scores every prediction beside production.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from scipy.stats import chisquare

from driftline import cli
from driftline.config import ConfigError, from_dict

from helpers import outcome, pred


def _refused(ab: dict) -> str:
    with pytest.raises(ConfigError) as err:
        from_dict({"ab": ab})
    return " ".join(str(err.value).split())


def test_a_shadow_design_takes_each_arm_at_the_fraction_it_scores() -> None:
    assert dict(from_dict({"ab": {"design": "shadow", "control": "A", "arms": {"A": 1, "S": 1}}}).ab.arms) == \
        {"A": 1, "S": 1}
    assert from_dict({"ab": {"design": "shadow", "control": "A", "arms": {"A": 1, "S": 0.2}}}).ab.arms["S"] == 0.2
    assert from_dict({"ab": {"design": "shadow", "control": "A", "arms": {"A": 0.5, "S": 0.5}}})  # as before
    msg = _refused({"design": "shadow", "control": "A", "arms": {"A": 100, "S": 100}})
    assert ("invalid field `ab.arms`: 'A', 'S' have a share over 1 (A: 100, S: 100): under `ab.design: shadow` every "
            "arm scores the same predictions, so an arm's share is the fraction of them it scores (1 = every one; "
            "the shares need not sum to 1) (percentages? write them as fractions: A: 1, S: 1)") in msg
    msg = _refused({"design": "shadow", "control": "A", "arms": {"A": 0.5, "B": 0.5, "S": 1}})
    assert "the control 'A' scores 0.5 of the predictions" in msg and "(share 1)" in msg


def test_a_shadow_arm_beside_a_split_is_named_with_the_rule_and_the_fix() -> None:
    msg = _refused({"design": "split", "control": "A", "arms": {"A": 0.5, "B": 0.5, "S": 1.0}})
    assert ("invalid field `ab.arms`: the expected shares sum to 2 (A: 0.5, B: 0.5, S: 1); they must sum to 1 under "
            "`ab.design: split`, where each prediction goes to one arm") in msg
    assert ("('S' at 1 scores every prediction: a shadow arm takes no share of a split. List only the arms that "
            "split the traffic here, and read 'S' against 'A' with `ab.design: shadow`, `control: A`, "
            "`arms: {A: 1, S: 1}` in a config of its own") in msg
    assert "at 1 scores every prediction" not in _refused({"design": "split", "control": "A",
                                                            "arms": {"A": 0.5, "B": 0.6}})


def _shadow_config(arms: dict[str, float]) -> dict:
    """Model churn under `ab.design: shadow`, control A, these arms."""
    return {"model": "churn", "ab": {"design": "shadow", "control": "A", "arms": arms}}


def _replayed(tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[bytes],
              arms: dict[str, float]) -> tuple[Path, list[str]]:
    """These events, in time order, replayed under a shadow design with control A and `arms`: the config file
    and the CLI's `--config`/`--db` arguments."""
    (tmp_path / "e.jsonl").write_bytes(b"\n".join(sorted(lines, key=lambda raw: json.loads(raw)["ts"])) + b"\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(_shadow_config(arms)))
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'd.db'}"]
    assert cli.main([*base, "replay", str(tmp_path / "e.jsonl"), "--json"]) == 0
    capsys.readouterr()
    return cfg, base


def _ab(base: list[str], capsys: pytest.CaptureFixture[str], at: str) -> dict:
    """`ab --json` over the 4 days before `at`."""
    assert cli.main([*base, "ab", "--window", "4d", "--at", at, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_sample_ratio_check_expects_the_fractions_scored(tmp_path, capsys) -> None:
    t0 = 1_780_272_000.0
    lines = []
    for i in range(500):  # production scores all 500 ids, the shadow arm every 5th
        lines += [pred(f"p{i}", 0.2 + 0.6 * (i % 2), t0 + 600 * i, variant="A", model="churn"),
                  outcome(f"p{i}", i % 2, t0 + 600 * i + 60)]
        if i % 5 == 0:
            lines.append(pred(f"p{i}", 0.3 + 0.5 * (i % 2), t0 + 600 * i, variant="S", model="churn"))
    _, base = _replayed(tmp_path, capsys, lines, {"A": 1, "S": 0.2})
    doc = _ab(base, capsys, "2026-06-05T00:00:00Z")
    srm = doc["srm"]
    assert {a: doc["arms"][a]["expected_share"] for a in ("A", "S")} == {"A": 1, "S": 0.2}
    ref = chisquare([500, 100], f_exp=[600 / 1.2, 600 * 0.2 / 1.2])  # expected 1 : 0.2
    assert srm["chi2"] == pytest.approx(ref.statistic, abs=1e-9) and srm["p_value"] == pytest.approx(ref.pvalue)
    assert srm["mismatch"] is False and srm["expected_share"] == pytest.approx({"A": 1 / 1.2, "S": 0.2 / 1.2})


def test_a_shadow_arm_scoring_a_tiny_fraction_is_not_read_as_the_old_sum_to_one_form(tmp_path, capsys) -> None:
    """`{A: 1, S: 0.00005}` sums to 1 within the split's tolerance, but its control scores every prediction: it is
    the fractions form (S scores 0.005 %), not the old sum-to-1 form (every arm scoring all). It was read as the
    old form: the SRM expected A and S in equal numbers, a false mismatch for a shadow arm sampling 1 in 20,000."""
    t0 = 1_780_272_000.0
    lines = []
    for i in range(400):  # production scores all 400 ids, the shadow arm one of them
        lines += [pred(f"p{i}", 0.2 + 0.6 * (i % 2), t0 + 600 * i, variant="A", model="churn"),
                  outcome(f"p{i}", i % 2, t0 + 600 * i + 60)]
    lines.append(pred("p7", 0.7, t0 + 600 * 7, variant="S", model="churn"))
    cfg, base = _replayed(tmp_path, capsys, lines, {"A": 1, "S": 0.00005})
    doc = _ab(base, capsys, "2026-06-04T00:00:00Z")
    assert {a: doc["arms"][a]["expected_share"] for a in ("A", "S")} == {"A": 1, "S": 0.00005}
    assert doc["srm"]["expected_share"] == pytest.approx({"A": 1 / 1.00005, "S": 0.00005 / 1.00005})
    # the old form, whose control scores less than all, still reads as every arm scoring every prediction
    cfg.write_text(yaml.safe_dump(_shadow_config({"A": 0.5, "S": 0.5})))
    assert _ab(base, capsys, "2026-06-04T00:00:00Z")["srm"]["expected_share"] == pytest.approx({"A": 0.5, "S": 0.5})
