"""The verdict line of an A/B readout: what the numbers support, and no more.

A pure function of the readout document (ab_readout.ab_document). A monitor looks at an experiment again and
again, so the interval a claim rests on is the always-valid one: a difference (recall, FPR, precision, alert
rate, cost) is stated only when the always-valid interval excludes 0 **and** the fixed-horizon test agrees
(Holm-adjusted p < α; in shadow mode the paired bootstrap interval and the exact McNemar test). A difference
only the fixed-horizon interval supports is reported as "not established under repeated looks", with both
intervals. It says when there are too few labelled positives, and puts sample-ratio mismatch and label
imbalance in front of the reader instead of hiding them.

Every difference is treatment − control, said once at the start of each comparison ("Differences are B − A."), and
written signed with its intervals in that same orientation, as in the readout's table and JSON (user tryout: "lower
by 0.010 [0.005, 0.016]" stood next to the always-valid "[−0.019, −0.002]" of the same difference).
"""

from __future__ import annotations

import math
from typing import Any

from .. import numbers
from ..core.stats import POS

MIN_POSITIVES = 30
"""Below this many labelled positives in an arm a recall comparison is only indicative."""
METRIC_NAMES = {"recall": "recall", "fpr": "FPR", "precision": "precision", "alert_rate": "alert rate"}


def _n(x: float) -> str:
    """A rate or the size of a difference with 3 decimals (numbers.py: '−' for negatives)."""
    return numbers.fixed(x, numbers.PLACES)


def _s(x: float) -> str:
    """A signed difference: '+0.056', '−0.018'."""
    return numbers.fixed(x, numbers.PLACES, signed=True)


def _k_of_n(c: dict[str, Any]) -> str:
    """'caught/positives' of one arm: '487/3,754'."""
    return numbers.ratio(c["k"], c["n"])


def _p(p: float | None) -> str:
    """'= 0.018', '< 0.0001' or '= n/a': a p-value (numbers.pvalue) ready to follow 'p'."""
    if p is None:
        return "= n/a"
    return "< 0.0001" if p < 1e-4 else f"= {numbers.pvalue(p)}"


def _iv(lo: float | None, hi: float | None) -> str:
    return "[n/a]" if lo is None or hi is None else f"[{_n(lo)}, {_n(hi)}]"


def _excludes(lo: float | None, hi: float | None) -> bool:
    return lo is not None and hi is not None and (lo > 0 or hi < 0)


def _signed(d: float, lo: float, hi: float) -> str:
    """'−0.010 [−0.016, −0.005]': a treatment − control difference with its interval, in the same orientation."""
    return f"{_s(d)} {_iv(lo, hi)}"


def _word(d: float, up: str = "higher", down: str = "lower") -> str:
    return up if d > 0 else down


def verdict(doc: dict[str, Any]) -> str:
    """One paragraph saying which differences the data support, with which interval, and what is unsafe."""
    arms = doc.get("arms") or {}
    if not arms or all(a["predictions"] == 0 for a in arms.values()):
        return "No predictions in the window: nothing to compare."
    comps = doc.get("comparisons") or []
    if not comps:
        return f"Only one arm ({doc['control']}) has predictions in the window: nothing to compare."
    parts: list[str] = []
    srm = doc.get("srm") or {}
    if srm.get("mismatch"):
        parts.append(_srm(srm, doc.get("design", "split")))
    for comp in comps:
        parts.extend(_comparison(doc, comp))
    return " ".join(parts)


def _srm(srm: dict[str, Any], design: str) -> str:
    obs, exp = srm.get("observed_share") or {}, srm.get("expected_share") or {}
    split = " / ".join(f"{a} {numbers.percent(obs.get(a) or 0)}" for a in exp)
    want = " / ".join(numbers.percent(v) for v in exp.values())
    if design == "shadow":
        return (f"Warning: the shadow arms scored different numbers of predictions ({split}, χ² p "
                f"{_p(srm.get('p_value'))}): one variant misses ids, so the arms cover different traffic.")
    return (f"Sample-ratio mismatch: the arms got {split} of predictions against {want} configured "
            f"(χ² = {numbers.fixed(srm['chi2'], 1, sep=True)}, p {_p(srm.get('p_value'))}): assignment or logging "
            f"is broken, so the comparisons below are unreliable until that is fixed.")


def _comparison(doc: dict[str, Any], comp: dict[str, Any]) -> list[str]:
    tr, ct = comp["treatment"], comp["control"]
    at, ac = doc["arms"][tr], doc["arms"][ct]
    if at["predictions"] == 0 or ac["predictions"] == 0:
        missing = tr if at["predictions"] == 0 else ct
        return [f"No predictions for {missing} in the window: {tr} vs {ct} cannot be compared."]
    rec = comp["metrics"]["recall"]
    out: list[str] = [f"Differences are {tr} − {ct}."]
    if comp.get("paired") is not None:
        out.extend(_shadow_recall(doc, comp))
    elif rec["diff"] is None:
        empty = ct if ac["positives"] == 0 else tr
        out.append(f"No labelled positives yet for {empty}: the recall of {tr} vs {ct} cannot be compared; "
                   f"wait for labels.")
    elif min(at["positives"], ac["positives"]) < MIN_POSITIVES:
        out.append(f"Too few labelled positives to judge recall ({ct}: {numbers.count(ac['positives'])}, {tr}: "
                   f"{numbers.count(at['positives'])}; fewer than {MIN_POSITIVES} per arm): {tr} − {ct} = "
                   f"{_s(rec['diff'])} {_iv(rec['low'], rec['high'])} is indicative only. {_power(comp)}")
    else:
        out.append(_split_recall(doc, comp))
    others = _others(doc, comp)
    pr = comp.get("paired")
    if others and pr is not None and (pr["pairs"] == 0 or any(pr["unpaired"].values())):
        paired_cost = (comp.get("cost_per_1000") or {}).get("method") == "paired_bootstrap"
        others.insert(0, "The FPR, precision and alert-rate comparisons that follow use each arm's own predictions, "
                         "over different traffic (FPR's test is the paired McNemar; the cost difference is the "
                         "paired bootstrap over the ids scored by both)." if paired_cost else
                         "The FPR, precision, alert-rate and cost comparisons that follow use each arm's own "
                         "predictions, over different traffic (FPR's test is the paired McNemar).")
    if others and pr is not None and pr["pairs"] > 0 and comp.get("independent_intervals"):
        others.append(comp["independent_intervals"]["text"])
    out.extend(others)
    out.extend(_cautions(comp))
    return out


def _seq_clause(doc: dict[str, Any], comp: dict[str, Any], label: str = "the always-valid interval") -> str:
    rec = comp["metrics"]["recall"]
    if rec["seq_low"] is None:
        return f"; {label} needs at least 10 labelled positives per arm."
    iv = _iv(rec["seq_low"], rec["seq_high"])
    if rec["seq_excludes_zero"]:
        return f"; {label} {iv} also excludes 0, so the difference holds even with repeated looks."
    more = rec.get("seq_more_needed")
    per_day = comp["power"].get("positives_per_day")
    tail = ""
    if more:
        n_days = rec["seq_more_days"] if "seq_more_days" in rec else math.ceil(more / per_day) if per_day else None
        days = "" if n_days is None else f" (~{n_days} day{'s' if n_days != 1 else ''})"
        tail = f": ~{numbers.counted(more, 'more labelled positive')}{days} if the difference holds"
    return f"; {label} {iv} still includes 0, so keep collecting before acting on repeated looks{tail}."


def _power(comp: dict[str, Any]) -> str:
    pw = comp["power"]
    if pw.get("mde") is None:
        return "The minimum detectable recall difference cannot be computed yet."
    s = (f"With {numbers.count(pw['n_control'])} and {numbers.count(pw['n_treatment'])} labelled positives the "
         f"minimum detectable recall gain "
         f"is {_n(pw['mde'])} (80 % power)")
    more, target = pw.get("more_per_arm"), pw.get("target_diff")
    if more is None or target is None:
        return s + "."
    if more > 0:
        basis = ("counting the labels still to come for the predictions already stored" if pw.get("label_delay")
                 else "at the current rate")
        if pw.get("label_delay") and pw["label_delay"].get("warnings"):  # an arm's longer delays cannot be seen yet
            basis += ", though longer label delays than the data can show yet count as none (see power)"
        days = f" (~{numbers.counted(pw['days'], 'day')} {basis})" if pw.get("days") is not None else ""
        mc, mt = pw.get("more_control"), pw.get("more_treatment")
        if mc is not None and mt is not None and _unequal(mc, mt):  # an unequal split: each arm its own count
            return s + (f"; detecting {_n(target)} needs ~{numbers.counted(mt, 'more labelled positive')} in "
                        f"{comp['treatment']} and ~{numbers.count(mc)} in {comp['control']}{days}.")
        return s + f"; detecting {_n(target)} needs ~{numbers.counted(more, 'more labelled positive')} per arm{days}."
    return s + f"; a true gain of {_n(target)} would probably (80 %) have shown up."


def _unequal(a: int, b: int) -> bool:
    """Whether two arms' counts differ by more than 10 % (then 'per arm' would misstate one of them)."""
    return abs(a - b) > 0.1 * max(a, b)


def _not_established(doc: dict[str, Any], comp: dict[str, Any], fixed: str) -> str:
    """A recall difference only the fixed-horizon interval supports: say so, with both intervals, and no claim."""
    tr, ct = comp["treatment"], comp["control"]
    rec = comp["metrics"]["recall"]
    return (f"Not established under repeated looks: {tr} − {ct} recall = {_s(rec['diff'])}; {fixed} excludes 0, "
            f"which would support a difference only at a single look planned in advance"
            f"{_seq_clause(doc, comp)}")


def _split_recall(doc: dict[str, Any], comp: dict[str, Any]) -> str:
    tr, ct = comp["treatment"], comp["control"]
    rec = comp["metrics"]["recall"]
    d, lo, hi, ph = rec["diff"], rec["low"], rec["high"], rec["p_holm"]
    alpha = doc.get("alpha", 0.05)
    cnt = rec["counts"]
    caught = f"caught {_k_of_n(cnt['treatment'])} vs {_k_of_n(cnt['control'])}"
    if _excludes(lo, hi) and ph is not None and ph < alpha:
        if not rec["seq_excludes_zero"]:
            return _not_established(doc, comp, f"the fixed-horizon 95 % interval {_iv(lo, hi)} (Holm p {_p(ph)}; "
                                                f"{caught})")
        return (f"{tr}'s recall is {_word(d)} than {ct}'s: {_signed(d, lo, hi)} (fixed-horizon 95 % "
                f"interval, Holm p {_p(ph)}; {caught}){_seq_clause(doc, comp)}")
    if _excludes(lo, hi):
        return (f"{tr} − {ct} recall = {_s(d)} {_iv(lo, hi)} ({caught}): the unadjusted interval excludes 0 "
                f"but after Holm correction over the four headline metrics{_of_each(comp)} p {_p(ph)}, so this is "
                f"not a significant difference yet. {_power(comp)}")
    return (f"No significant recall difference between {tr} and {ct}: {_s(d)} {_iv(lo, hi)} (Holm p "
            f"{_p(ph)}; {caught}); the interval includes 0, which does not show they are equal: differences "
            f"from {_n(lo)} to {_n(hi)} remain compatible with the data. {_power(comp)}")


def _of_each(comp: dict[str, Any]) -> str:
    """' of each of B and C' when the Holm family spans several treatments, else nothing."""
    treatments = comp.get("holm_treatments") or []
    return "" if len(treatments) < 2 else " of each of " + ", ".join(treatments[:-1]) + " and " + treatments[-1]


def _paired_recall(doc: dict[str, Any], comp: dict[str, Any]) -> str:
    tr, ct = comp["treatment"], comp["control"]
    pr = comp["paired"]
    b, t = pr["bootstrap"]["recall"], pr["recall"]
    d, lo, hi = b["diff"], b["low"], b["high"]
    alpha = doc.get("alpha", 0.05)
    disc = (f"{tr} catches {numbers.count(t['treatment_only'])} positives {ct} misses, {ct} catches "
            f"{numbers.count(t['control_only'])} that "
            f"{tr} misses; exact McNemar p {_p(t['p_value'])}, Holm over recall and FPR{_of_each(comp)} p "
            f"{_p(t['p_holm'])}")
    head = "On the ids scored by both: "
    if _excludes(lo, hi) and t["p_holm"] is not None and t["p_holm"] < alpha:
        label = "the always-valid interval (unpaired, conservative)"
        if not comp["metrics"]["recall"]["seq_excludes_zero"]:
            return (head + f"not established under repeated looks: {tr} − {ct} recall = {_s(d)}; the paired "
                    f"bootstrap 95 % interval {_iv(lo, hi)} ({disc}) excludes 0, which would support a difference "
                    f"only at a single look planned in advance" + _seq_clause(doc, comp, label))
        return (head + f"{tr}'s recall is {_word(d)} than {ct}'s: {_signed(d, lo, hi)} (paired bootstrap "
                f"95 % interval; {disc})" + _seq_clause(doc, comp, label))
    return (head + f"no significant recall difference: {_s(d)} {_iv(lo, hi)} (paired bootstrap; {disc}); "
            f"the interval includes 0, which does not show they are equal. {_power(comp)}")


def _shadow_recall(doc: dict[str, Any], comp: dict[str, Any]) -> list[str]:
    """Shadow mode's recall, led by the paired comparison (the same ids scored by both arms) and how many ids are
    paired, before any unpaired figure. A tryout's verdict led with the unpaired "S − A = −0.443" (S's 3 labelled
    positives against A's 58, over different traffic) while the paired ids showed no discordant positive, and
    named the 513 unpaired rows only in a closing caution."""
    tr, ct = comp["treatment"], comp["control"]
    pr, rec = comp["paired"], comp["metrics"]["recall"]
    rows, unpaired = pr["rows"], pr["unpaired"]
    head = f"Shadow mode, {numbers.count(pr['pairs'])} ids scored by both"
    gaps = [f"{numbers.count(unpaired[k])} of {a}'s {numbers.count(rows[k])} predictions have no {b} score"
            for k, a, b in (("control", ct, tr), ("treatment", tr, ct)) if unpaired[k]]
    positives = int(sum(sum(r) for r in pr["table"]["counts"][POS]))
    if pr["pairs"] == 0:
        out = [head + ": none, so recall cannot be compared on the same traffic."]
    else:
        out = [head + (f"; {' and '.join(gaps)}: only the paired ids compare the arms on the same traffic."
                       if gaps else " (every prediction paired).")]
        t = pr["recall"]
        if positives == 0:
            out.append("No labelled positives among the paired ids yet: recall cannot be compared; wait for labels.")
        elif positives < MIN_POSITIVES or pr["bootstrap"]["recall"]["diff"] is None:
            b = pr["bootstrap"]["recall"]
            out.append(f"Too few labelled positives among the paired ids to judge recall ({numbers.count(positives)}"
                       f"; fewer than {MIN_POSITIVES}): {tr} − {ct} = {_s(b['diff'])} {_iv(b['low'], b['high'])} "
                       f"(paired bootstrap; {tr} catches {numbers.count(t['treatment_only'])} positives {ct} misses, "
                       f"{ct} catches {numbers.count(t['control_only'])} that {tr} misses) is indicative only.")
        else:
            out.append(_paired_recall(doc, comp))
    cnt = rec["counts"]
    if rec["diff"] is not None and (cnt["control"]["n"], cnt["treatment"]["n"]) != (positives, positives):
        out.append(f"Unpaired, over different traffic (each arm's own labelled predictions, {ct} "
                   f"{numbers.count(cnt['control']['n'])} and {tr} {numbers.count(cnt['treatment']['n'])} "
                   f"positives): {tr} − {ct} recall = {_s(rec['diff'])} {_iv(rec['low'], rec['high'])}, not a "
                   f"like-for-like comparison.")
    return out


def _others(doc: dict[str, Any], comp: dict[str, Any]) -> list[str]:
    """FPR, precision, alert rate and cost: a difference is stated only when the always-valid interval
    excludes 0 as well as the (Holm-adjusted) fixed-horizon test; fixed-only differences are named as such."""
    tr, ct = comp["treatment"], comp["control"]
    alpha = doc.get("alpha", 0.05)
    paired = comp.get("paired")
    found, fixed_only, adjusted, quiet = [], [], [], []
    for m in ("fpr", "precision", "alert_rate"):
        e = comp["metrics"][m]
        p, raw, family = e["p_holm"], e.get("p_value"), _holm_family(comp["metrics"], "", comp)
        if m == "fpr" and paired is not None and paired["fpr"]["p_holm"] is not None:
            p, raw = paired["fpr"]["p_holm"], paired["fpr"].get("p_value")
            family = _holm_family({k: paired[k] for k in ("recall", "fpr")}, "exact McNemar ", comp)
        if e["diff"] is None:
            continue
        name, seq = METRIC_NAMES[m], _iv(e.get("seq_low"), e.get("seq_high"))
        if _excludes(e["low"], e["high"]) and p is not None and p < alpha:
            if not e.get("seq_excludes_zero"):
                fixed_only.append(f"{tr} − {ct} {name} = {_s(e['diff'])}: the fixed-horizon interval "
                                  f"{_iv(e['low'], e['high'])} excludes 0 but the always-valid interval {seq} does "
                                  f"not (Holm p {_p(p)}), so it is not established under repeated looks.")
                continue
            c = e["counts"]
            size = _signed(e["diff"], e["low"], e["high"])
            found.append(f"{tr}'s {name} is {_word(e['diff'])}: {size} (fixed-horizon 95 % interval, Holm p "
                         f"{_p(p)}; {_k_of_n(c['treatment'])} vs {_k_of_n(c['control'])}); the always-valid "
                         f"interval {seq} also excludes 0.")
        elif _excludes(e["low"], e["high"]) and p is not None:
            head = (f"{tr} − {ct} {name} = {_s(e['diff'])} {_iv(e['low'], e['high'])}: the unadjusted interval "
                    "excludes 0")
            n, which, test = family
            adjusted.append(f"{head} but the {test or 'score '}test does not (p {_p(raw)})." if raw is not None
                            and raw >= alpha else
                            f"{head} ({test}p {_p(raw)}), but the difference is not significant after Holm "
                            f"correction for {n} comparison{'s' if n != 1 else ''} ({which}; adjusted p {_p(p)}).")
        else:
            quiet.append(name)
    out = found + fixed_only + adjusted
    if quiet:
        names = quiet[0] if len(quiet) == 1 else ", ".join(quiet[:-1]) + " or " + quiet[-1]
        out.append(f"No significant difference in {names}.")
    out.extend(_cost(doc, comp))
    return out


def _holm_family(entries: dict[str, Any], test: str = "", comp: dict[str, Any] | None = None
                 ) -> tuple[int, str, str]:
    """(how many comparisons the Holm correction spanned, which, the test's name): the family is the metrics with
    a p-value, as abstats.holm counts it (the four headline metrics; in shadow mode's McNemar tests recall and
    FPR). A user read "No significant difference in FPR" beside an FPR interval excluding 0 (p 0.041) and could
    not tell that the Holm-adjusted p (0.083) decided it."""
    kept = [METRIC_NAMES[m] for m, e in entries.items() if e.get("p_value") is not None]
    listed = ", ".join(kept[:-1]) + " and " + kept[-1] if len(kept) > 1 else "".join(kept)
    treatments = (comp or {}).get("holm_treatments") or []
    if len(treatments) > 1:  # one family over every treatment (readouts/ab.holm_across_treatments)
        arms = ", ".join(treatments[:-1]) + " and " + treatments[-1]
        control = (comp or {}).get("control")
        return len(kept) * len(treatments), f"{listed} of each of {arms} against {control}", test
    return len(kept), listed, test


def _cost(doc: dict[str, Any], comp: dict[str, Any]) -> list[str]:
    """The cost per 1,000 predictions, stated as a difference only when its always-valid interval excludes 0."""
    cd = comp.get("cost_per_1000") or {}
    cur, tr = doc.get("currency", ""), comp["treatment"]
    if cd.get("diff") is None:
        return []
    def amount(v: float, signed: bool = False, lo: float | None = None, hi: float | None = None) -> str:
        return numbers.money(v, lo, hi, signed=signed, currency=cur)

    seq = ("[n/a]" if cd.get("seq_low") is None else
           amount(cd["diff"], False, cd["seq_low"], cd["seq_high"]).split(" ", 1)[1])
    if _excludes(cd.get("low"), cd.get("high")) and cd.get("seq_excludes_zero"):
        return [f"Cost per 1,000 predictions is {_word(cd['diff'])} for {tr}: "
                f"{amount(cd['diff'], True, cd['low'], cd['high'])} (fixed-horizon 95 % interval); the always-valid "
                f"interval {seq} also excludes 0."]
    if _excludes(cd.get("low"), cd.get("high")):
        fixed_iv = amount(cd["diff"], False, cd["low"], cd["high"]).split(" ", 1)[1]
        return [f"Cost per 1,000 predictions: {amount(cd['diff'], True)}; the fixed-horizon interval "
                f"{fixed_iv} excludes 0 but the always-valid interval {seq} does not, so "
                f"it is not established under repeated looks."]
    return [f"Cost per 1,000 predictions: {amount(cd['diff'], True, cd['low'], cd['high'])}, which includes 0."]


def _cautions(comp: dict[str, Any]) -> list[str]:
    ct = comp["control"]
    out = [f"Caution: {w}" for w in (comp.get("label_balance") or {}).get("warnings", [])]
    pr = comp.get("paired")
    if pr is not None:
        lf = pr["labels_follow_control"]
        if lf["warning"]:
            out.append(f"Caution: labels follow {ct}'s flags (coverage "
                       f"{numbers.percent(lf['coverage_flagged']['value'])} "
                       f"when {ct} flags vs {numbers.percent(lf['coverage_unflagged']['value'])} when not): positives "
                       f"{ct} misses are under-labelled, so the recall comparison is biased in favour of {ct}.")
    return out
