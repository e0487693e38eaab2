"""Shadow mode's verdict leads with the paired comparison (the same ids scored by both arms) and says how many ids
are paired and unpaired up front. A new-user tryout read "S − A = −0.443 [−0.728, 0.033]" (S's 3 labelled
positives against A's 58, over different traffic) as the recall sentence while the paired block showed no
discordant positive and a bootstrap difference of 0 [0, 0]; the 513 unpaired rows were named only at the end."""

from __future__ import annotations

from typing import Any

from driftline.config import from_dict

from helpers import outcome, pred
from test_ab_readout import T0, _doc, _ingest

SHADOW = {"ab": {"design": "shadow", "control": "A", "arms": {"A": 0.5, "S": 0.5}}}


def _stream(paired_pos: int, paired_caught: int, paired_neg: int, a_only_pos: int, a_only_caught: int,
            a_only_neg: int) -> list[bytes]:
    """Paired ids that A and S flag alike (`paired_caught` of the paired positives caught by both), and ids only A
    scored, of which A catches `a_only_caught` positives: the paired arms agree, the unpaired rows differ."""
    raws: list[bytes] = []
    t = T0
    for i in range(paired_pos + paired_neg):
        t += 60
        y = int(i < paired_pos)
        score = 0.9 if i < paired_caught else 0.2
        raws += [pred(f"p{i}", score, t, variant="A"), pred(f"p{i}", score - 0.05, t + 1, variant="S"),
                 outcome(f"p{i}", y, t + 3600)]
    for j in range(a_only_pos + a_only_neg):
        t += 60
        raws += [pred(f"a{j}", 0.9 if j < a_only_caught else 0.2, t, variant="A"),
                 outcome(f"a{j}", int(j < a_only_pos), t + 3600)]
    return raws


def _verdict(tmp_path, raws: list[bytes]) -> tuple[str, dict[str, Any]]:
    config = from_dict(SHADOW)
    store = _ingest(f"sqlite:///{tmp_path / 'shadow.db'}", config, raws)
    try:
        doc = _doc(store, config)
    finally:
        store.close()
    return doc["verdict"], doc["comparisons"][0]


def test_the_tryout_shape_leads_with_the_paired_ids(tmp_path) -> None:
    """60 paired ids (3 positives, flagged alike), 513 ids only A scored (55 positives, 26 caught by A)."""
    text, comp = _verdict(tmp_path, _stream(3, 0, 57, 55, 26, 458))
    assert comp["paired"]["recall"]["discordant"] == 0 and comp["metrics"]["recall"]["diff"] < -0.3
    counts = "Shadow mode, 60 ids scored by both; 513 of A's 573 predictions have no S score"
    assert counts in text
    paired = text.index("Too few labelled positives among the paired ids to judge recall (3; fewer than 30): "
                        "S − A = 0.000 [0.000, 0.000] (paired bootstrap; S catches 0 positives A misses")
    unpaired = text.index("Unpaired, over different traffic (each arm's own labelled predictions, A 58 and S 3 "
                          "positives): S − A recall = −")
    assert text.index(counts) < paired < unpaired, text
    assert "Too few labelled positives to judge recall (A: 58, S: 3" not in text  # the unpaired lead is gone


def test_enough_paired_positives_no_unpaired_claim(tmp_path) -> None:
    """80 paired positives flagged alike; 300 positives only A scored, 290 caught: unpaired, S's recall is far
    lower (significant); paired, the arms are identical. The verdict must not claim S's recall is lower."""
    text, comp = _verdict(tmp_path, _stream(80, 40, 400, 300, 290, 600))
    rec = comp["metrics"]["recall"]
    assert rec["high"] < 0 and rec["seq_excludes_zero"]  # the unpaired comparison alone would claim a difference
    assert text.index("Shadow mode, 480 ids scored by both; 900 of A's 1,380 predictions have no S score") < \
        text.index("On the ids scored by both: no significant recall difference: 0.000") < \
        text.index("Unpaired, over different traffic"), text
    assert "recall is lower" not in text and "recall is higher" not in text
    assert text.index("Unpaired, over different traffic") < text.index(
        "The FPR, precision, alert-rate and cost comparisons that follow use each arm's own predictions, over "
        "different traffic") < text.index("S's alert rate is lower"), text


def test_fully_paired_says_so_and_adds_no_unpaired_sentence(tmp_path) -> None:
    text, _ = _verdict(tmp_path, _stream(80, 40, 400, 0, 0, 0))
    assert "Shadow mode, 480 ids scored by both (every prediction paired). On the ids scored by both: " in text
    assert "Unpaired" not in text and "have no" not in text
    assert "The FPR, precision" not in text


def test_shadow_readout_says_its_independent_intervals_are_conservative(tmp_path) -> None:
    """Shadow arms score the same ids, yet FPR, precision and alert rate are compared with independent-sample
    (Newcombe) intervals: the readout says so, and that this is conservative (measured below)."""
    text, comp = _verdict(tmp_path, _stream(80, 40, 400, 0, 0, 0))
    ind = comp["independent_intervals"]
    assert ind["metrics"] == ["fpr", "precision", "alert_rate"] and ind["conservative"] is True
    assert ind["text"] in text
    assert "treat the arms as independent samples: conservative" in ind["text"]


def test_independent_intervals_on_shadow_pairs_are_conservative() -> None:
    """The measurement behind that sentence (benchmarks/shadow_pairing_coverage.py), seeded: on 2,000 shadow ids
    whose decisions mostly agree, the independent precision interval holds the truth in every one of 150 windows
    and is over twice as wide as the paired bootstrap."""
    import sys
    from pathlib import Path

    import numpy as np
    from statsmodels.stats.proportion import confint_proportions_2indep

    from driftline.analysis.paired import PairedTable, paired_bootstrap

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from shadow_pairing_coverage import cell_probs, truths

    p = cell_probs(0.05, 0.9)
    truth = truths(p)["precision"]
    rng = np.random.default_rng(3)
    hits, ratio = 0, []
    for _ in range(150):
        tab = PairedTable(rng.multinomial(2_000, p.ravel()).reshape(3, 2, 2))
        c, t = tab.arm("control"), tab.arm("treatment")
        lo, hi = confint_proportions_2indep(t.tp, t.tp + t.fp, c.tp, c.tp + c.fp, method="newcomb")
        boot = paired_bootstrap(tab, n_boot=500, seed=0).precision
        hits += lo <= truth <= hi
        ratio.append((hi - lo) / (boot.high - boot.low))
    assert hits == 150
    assert np.median(ratio) > 2.0


def test_unpaired_rows_sentence_names_the_paired_cost(tmp_path) -> None:
    """With costs and paired ids the cost difference is the paired bootstrap over the ids scored by both, so the
    sentence about comparisons over each arm's own predictions no longer lists the cost (it once did)."""
    config = from_dict({**SHADOW, "costs": {"currency": "EUR", "monthly_volume": 100_000, "missed_positive": 400,
                                            "review_per_flag": 5}})
    store = _ingest(f"sqlite:///{tmp_path / 'shadow.db'}", config, _stream(80, 40, 400, 300, 290, 600))
    try:
        doc = _doc(store, config)
    finally:
        store.close()
    comp, text = doc["comparisons"][0], doc["verdict"]
    assert comp["cost_per_1000"]["method"] == "paired_bootstrap"
    assert ("The FPR, precision and alert-rate comparisons that follow use each arm's own predictions, over "
            "different traffic (FPR's test is the paired McNemar; the cost difference is the paired bootstrap over "
            "the ids scored by both).") in text
    assert "alert-rate and cost comparisons" not in text
    assert comp["independent_intervals"]["metrics"] == ["fpr", "precision", "alert_rate"]


def test_the_cli_footnote_names_the_paired_bootstrap_for_shadow_costs(tmp_path, capsys) -> None:
    """Verification tryout: in shadow mode the cost row read `cost / 1,000 (paired_bootstrap)` while the footnote
    under it said "costs: mid-p per arm, MOVER for differences". The row names the method in words (a later tryout:
    `mid_p_mover` in a split's row was an internal key)."""
    from driftline.cli import main

    cfg = tmp_path / "c.yaml"
    cfg.write_text("costs: {currency: EUR, monthly_volume: 1000, missed_positive: 400, review_per_flag: 5}\n"
                   "ab: {design: shadow, control: A, arms: {A: 0.5, S: 0.5}}\n")
    events = tmp_path / "e.jsonl"
    events.write_bytes(b"\n".join(_stream(40, 20, 60, 10, 5, 30)) + b"\n")
    db = f"sqlite:///{tmp_path / 'd.db'}"
    assert main(["--config", str(cfg), "--db", db, "replay", str(events), "--json"]) == 0
    capsys.readouterr()
    assert main(["--config", str(cfg), "--db", db, "ab", "--window", "1d", "--at", "2023-11-15"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "cost / 1,000 (paired bootstrap)" in out and "paired_bootstrap" not in out  # the README's words
    assert "(costs: mid-p per arm, a paired bootstrap over the ids scored by both for differences)" in out
    assert "MOVER" not in out
