"""`driftline alerts render`: Prometheus alerting rules generated from the config's triggers.

One alert per trigger on the exported series (see docs/METRICS.md): CamelCase name, `severity` and `trigger`
labels, summary/description/runbook_url annotations, `for:` from the trigger and `keep_firing_for:` from its
cooldown. The expression judges the estimate (`point`) or the interval bound nearest the line (`confident`),
is guarded by the trigger's minimum n, and, with hysteresis, keeps a firing alert until the value is back past
line ± hysteresis (via the ALERTS series), like driftline's own evaluator. Metrics exported without interval
series (scores, label delay, drift, dead-letter rate, silence) are judged on their value in both modes; the
dead-letter rate and silence are computed from the pipeline series per job. Every alert's identity leaves
`instance` out (`max without (instance)`), so replicas and a change of leader give one alert per condition.

One sender per trigger alert: with `notify.alertmanager_url` set, driftline's own notifier sends the trigger
alerts to Alertmanager, so no alerting rule is rendered for them (Prometheus would page a second time for the
same condition); without it, these rules are the sender.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..config import Config
from ..durations import format_duration
from ..terminal import visible_exact
from ..core.labels import AGGREGATE
from .metrics import canonical, info
from .mixin import DEFAULT
from .model import Rule
from .rule_text import TITLES, fmt_line, literal, ratio_fmt_for, value_tpl, with_user
from .runner import compile_rules

EXPORTED_RATES = ("recall", "fpr", "precision", "alert_rate", "label_coverage", "prevalence", "specificity",
                  "accuracy")
_INTERVAL_SCORES = {"roc_auc": "DeLong", "average_precision": "logit"}
"""Score series exported with a 95 % interval (`<series>_lower`, `<series>_upper`): judged on its bound in
confident mode."""
_SCORE_SERIES = {"roc_auc": "driftline_roc_auc", "average_precision": "driftline_average_precision",
                 "brier": "driftline_brier_score", "log_loss": "driftline_log_loss", "ece": "driftline_ece"}
_WINDOWED_ON = ("model", "model_version", "variant", "window")
DELAY_METRICS = ("label_delay_p50", "label_delay_p95")
"""Judged on a driftline_label_delay_seconds quantile, guarded by its _count (no `quantile` label)."""
NOTIFIER_SENDS = ("notify.alertmanager_url is set: driftline's notifier sends the trigger alerts to Alertmanager, "
                  "so no Prometheus alerting rule is rendered for them (one sender, one page per condition)")


def alert_name(trigger_name: str) -> str:
    """CamelCase alert name of a trigger: recall_below_target → RecallBelowTarget."""
    return "".join(p[:1].upper() + p[1:] for p in trigger_name.split("_") if p)


def num(v: float) -> str:
    """A number as PromQL/YAML text without a spurious '.0'."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


@dataclass(frozen=True, slots=True)
class RenderedAlert:
    """One Prometheus alerting rule."""

    alert: str
    expr: str
    for_: str | None
    keep_firing_for: str | None
    labels: dict[str, str]
    annotations: dict[str, str]


@dataclass(frozen=True, slots=True)
class Rendered:
    """The rule file's alerts, plus the triggers that cannot be expressed on exported series."""

    alerts: list[RenderedAlert]
    skipped: list[str] = field(default_factory=list)
    sender: str | None = None
    """Why no trigger alert is rendered (driftline's notifier sends them), or None."""


def _sel(labels: dict[str, str]) -> str:
    """A PromQL selector; values escaped as the exporter exports them (exporter/label_text)."""
    return "{" + ", ".join(f"{k}={json.dumps(visible_exact(v))}" for k, v in labels.items()) + "}"


_WHOLE_N = {"positives": "driftline_window_positives{S}",
            "negatives": "driftline_window_labelled{S} - driftline_window_positives{S}",
            "flagged_labelled": "driftline_window_true_positives{S} + driftline_window_false_positives{S}",
            "labelled": "driftline_window_labelled{S}", "predictions": "driftline_window_predictions{S}"}
"""The whole window's counts behind the windowed metrics, as PromQL with the selector at each {S}."""
N_OF = {"recall": ("positives", False, "labelled positives"), "fpr": ("negatives", True, "labelled negatives"),
        "specificity": ("negatives", True, "labelled negatives"),
        "precision": ("flagged_labelled", True, "flagged labelled predictions"),
        "accuracy": ("labelled", True, "labelled predictions"),
        "prevalence": ("labelled", True, "labelled predictions"),
        "alert_rate": ("predictions", False, "predictions"), "label_coverage": ("predictions", False, "predictions"),
        "average_precision": ("positives", True, "labelled positives"),
        "brier": ("labelled", True, "labelled predictions"), "log_loss": ("labelled", True, "labelled predictions"),
        "ece": ("labelled", True, "labelled predictions")}
"""Per windowed metric: its n (the min_n guard's count, as `driftline alerts evaluate` judges it), whether it is read
over the window's matured part (implicit-negative policy: analysis.matured.READ_MATURED), and its words."""


def n_query(count: str, matured: bool) -> str:
    """A count as PromQL with {S} for the selector: for a metric read over the matured part, the exporter's
    driftline_window_matured_* counts while it exports them (a window reaching into the maturity period), else
    (`or`: no such series) the whole window's, which are then the same."""
    whole = _WHOLE_N[count]
    if not matured or count == "predictions":
        return whole
    return f"({whole.replace('driftline_window_', 'driftline_window_matured_')}) or ({whole})"


def _guard(count: str, matured: bool, s: str, n_min: str) -> str:
    """`count` (N_OF) over the selector `s` at least `n_min`: a single series as it is, an expression in brackets."""
    q = n_query(count, matured)
    return f"{q.replace('{S}', s)} >= {n_min}" if " " not in q else f"(\n  {q.replace('{S}', s)}\n) >= {n_min}"


def _series(rule: Rule, model: str) -> tuple[str, str, tuple[str, ...]] | None:
    """(judged series expression, n-guard expression or '', labels to match ALERTS on) for a rule."""
    m = canonical(rule.metric)
    variant = rule.variant or AGGREGATE
    win = {"model": model, "variant": variant, "window": rule.window}
    s = _sel(win)
    n_min = num(rule.min_n)
    if m in EXPORTED_RATES:
        bound = "" if rule.mode == "point" else ("_upper" if rule.below else "_lower")
        return f"driftline_{m}{bound}_ratio{s}", _guard(*N_OF[m][:2], s, n_min), _WINDOWED_ON
    if m in _SCORE_SERIES:  # ROC AUC: n = the fewer of positives and negatives, of the matured part
        guard = (f"{_guard('positives', True, s, n_min)}\nand\n{_guard('negatives', True, s, n_min)}"
                 if m == "roc_auc" else _guard(*N_OF[m][:2], s, n_min))
        bound = "_upper" if rule.below else "_lower"
        return f"{_SCORE_SERIES[m]}{bound if m in _INTERVAL_SCORES and rule.mode == 'confident' else ''}{s}", guard, \
            _WINDOWED_ON
    if m in DELAY_METRICS:
        q = "0.5" if m == "label_delay_p50" else "0.95"
        # n: the delays behind the quantile (labelled less implicit negatives), as `alerts evaluate` counts it
        return (f"driftline_label_delay_seconds{_sel({**win, 'quantile': q})}",
                f"driftline_label_delay_seconds_count{s} >= {n_min}", _WINDOWED_ON)
    if m == "drifted":
        sel = _sel({'model': model, 'window': rule.window})
        if rule.feature is None:
            return f"sum by (model, window) (driftline_feature_drifted{sel})", "", ("model", "window")
        return (f"driftline_feature_drifted{_sel({'model': model, 'window': rule.window, 'feature': rule.feature})}",
                "", ("model", "window", "feature"))
    if m in ("psi", "js"):
        if rule.feature is None:
            if m == "js":
                return None
            return f"driftline_score_psi{_sel({'model': model, 'window': rule.window})}", "", ("model", "window")
        name = "driftline_feature_psi" if m == "psi" else "driftline_feature_js_distance"
        return (f"{name}{_sel({'model': model, 'window': rule.window, 'feature': rule.feature})}", "",
                ("model", "window", "feature"))
    if m in ("multivariate_drift", "multivariate_drifted"):
        if rule.variant is not None:
            return None  # exported for the whole model only
        sel = _sel({"model": model, "window": rule.window})
        name = "driftline_multivariate_drift_ratio" if m == "multivariate_drift" else \
            "driftline_multivariate_drift_drifted"
        return f"{name}{sel}", f"driftline_multivariate_drift_sample_rows{sel} >= {n_min}", ("model", "window")
    if m == "dead_letter_rate":
        dead = "sum by (job) (driftline_dead_letters_total)"
        events = "sum by (job) (driftline_events_total)"
        total = f"(\n    {events}\n  + on (job)\n    ({dead} or 0 * {events})\n)"
        return (f"(\n  ({dead} or 0 * {events})\n/ on (job)\n  {total}\n)",
                f"{total} >= {n_min}", ("job",))
    if m == "silence_seconds":
        return ("(time() - max by (job) (driftline_last_stored_timestamp_seconds))",
                f"sum by (job) (driftline_events_total) >= {n_min}", ("job",))
    return None


def _expr(rule: Rule, name: str, series: str, guard: str, on: tuple[str, ...]) -> str:
    line = num(rule.value)
    judged = f"{series} {rule.op} {line}"
    if rule.hysteresis > 0:
        back = rule.value + rule.hysteresis if rule.below else rule.value - rule.hysteresis
        judged = (f"(\n  {series} {rule.op} {line}\nor\n  (\n    {series} {rule.op} {num(back)}\n"
                  f"    and on ({', '.join(on)})\n    ALERTS{_sel({'alertname': name, 'alertstate': 'firing'})}\n"
                  f"  )\n)")
    both = "and ignoring (quantile)" if canonical(rule.metric) in DELAY_METRICS else "and"  # the guard has none
    body = f"{judged}\n{both}\n{guard}" if rule.min_n > 0 and guard else judged
    # One alert per condition whatever the number of replicas: the series' identity without `instance` (only
    # the leader replica exports them, and a new leader continues the same alert).
    return "max without (instance) (\n" + "\n".join("  " + ln if ln else ln for ln in body.split("\n")) + "\n)\n"


def runbook_url(rule: Rule, base: str) -> str:
    """The absolute runbook link of a trigger's alert: its own `runbook_url`, else base#<alertname lowercased>."""
    return rule.runbook_url or f"{base}#{alert_name(rule.name).lower()}"


_SCOPE = (DEFAULT.cluster_label, DEFAULT.job_label)
_SCOPE_SEL = "".join(f"{k}=%q," for k in _SCOPE)
_SCOPE_ARGS = "".join(f'(index $labels "{k}") ' for k in _SCOPE)
"""The alert's own cluster and job in every series an annotation queries: without them `query | first` read any
deployment's series of the same model (on-call tryout: a page quoted another database's interval and n of model
fraud). `index` gives "" for a label the alert lacks, which matches series without it."""
_WINDOW_SEL = "model=%q,model_version=%q,variant=%q,window=%q"
_WINDOW_ARGS = "$labels.model $labels.model_version $labels.variant $labels.window"


def _annotations(rule: Rule, name: str, model: str, base: str) -> dict[str, str]:
    m = canonical(rule.metric)
    unit = info(m).unit
    short, long = TITLES.get(m, (m, m))
    direction = "under" if rule.below else "over"
    line = fmt_line(rule, unit)
    ratio_fmt = ratio_fmt_for(line)
    value = value_tpl(unit, ratio_fmt)
    confident = rule.mode == "confident" and (m in EXPORTED_RATES or m in _INTERVAL_SCORES)
    named = short if short[:2].isupper() else short[:1].lower() + short[1:]  # 'FPR' stays, 'Recall' → 'recall'
    what_short = (f"{'Upper' if rule.below else 'Lower'} 95% bound of {named} of {{{{ $labels.model }}}}"
                  if confident else f"{short} of {{{{ $labels.model }}}}")
    runbook = literal(runbook_url(rule, base))
    if m in ("dead_letter_rate", "silence_seconds"):
        summary = f"{short} of driftline job {{{{ $labels.job }}}} is {value} (line {rule.op} {line})"
        desc = (f"{long} of driftline job {{{{ $labels.job }}}} is {value}, {direction} the agreed line of {line} "
                f"(trigger {literal(rule.name)}, model {literal(model)}).")
        return {"summary": summary, "description": with_user(rule, desc), "runbook_url": runbook}
    if m in ("psi", "js", "drifted", "multivariate_drift", "multivariate_drifted"):
        subject = ("the score" if m in ("psi", "js") else "all features") if rule.feature is None \
            else "feature {{ $labels.feature }}"
        summary = (f"{short} of {subject} of {{{{ $labels.model }}}} is {value} over {{{{ $labels.window }}}} "
                   f"(line {rule.op} {line})")
        desc = (f"{long} of {subject} of model {{{{ $labels.model }}}} over the last {{{{ $labels.window }}}} "
                f"against the reference is {value}, {direction} the agreed line of {line}.")
        return {"summary": summary, "description": with_user(rule, desc), "runbook_url": runbook}
    summary = f"{what_short} is {value} over {{{{ $labels.window }}}} (line {rule.op} {line})"
    ident = ("{{ $labels.model }} (version {{ $labels.model_version }}, variant {{ $labels.variant }})")
    subject = (f"the {'upper' if rule.below else 'lower'} bound of the 95% interval of {long.lower()} of model "
               if confident else f"{long} of model ")
    desc = f"{subject[:1].upper()}{subject[1:]}{ident} over the last {{{{ $labels.window }}}} is {value}, {direction} the agreed line of {line}"
    if m in EXPORTED_RATES:
        args, sel = _SCOPE_ARGS + _WINDOW_ARGS, _SCOPE_SEL + _WINDOW_SEL
        fmt = ratio_fmt
        lo = (f'{{{{ with printf "driftline_{m}_lower_ratio{{{sel}}}" {args} | query }}}}'
              f"{{{{ . | first | value | {fmt} }}}}{{{{ else }}}}n/a{{{{ end }}}}")
        hi = (f'{{{{ with printf "driftline_{m}_upper_ratio{{{sel}}}" {args} | query }}}}'
              f"{{{{ . | first | value | {fmt} }}}}{{{{ else }}}}n/a{{{{ end }}}}")
        count, matured, words = N_OF[m]
        q = n_query(count, matured)  # the n behind the rate (the min_n guard's count), as in `driftline alerts`
        n_q, n_args = q.replace("{S}", f"{{{sel}}}"), " ".join([args] * q.count("{S}"))
        n_txt = (f', n = {{{{ with printf "{n_q}" {n_args} | query }}}}'
                 f"{{{{ . | first | value }}}}{{{{ else }}}}n/a{{{{ end }}}} {words}")
        desc += f" (95% interval {lo} to {hi}{n_txt})."
    elif m in _INTERVAL_SCORES:
        args, sel = _SCOPE_ARGS + _WINDOW_ARGS, _SCOPE_SEL + _WINDOW_SEL
        lo, hi = (f'{{{{ with printf "{_SCORE_SERIES[m]}_{end}{{{sel}}}" {args} | query }}}}'
                  f"{{{{ . | first | value | {ratio_fmt} }}}}{{{{ else }}}}n/a{{{{ end }}}}"
                  for end in ("lower", "upper"))
        desc += f" (95% {_INTERVAL_SCORES[m]} interval {lo} to {hi})."
    else:
        desc += "."
    if rule.hysteresis > 0:
        back = rule.value + rule.hysteresis if rule.below else rule.value - rule.hysteresis
        desc += (f" Hysteresis: it stays firing until back {'above' if rule.below else 'below'} "
                 f"{fmt_line(Rule(rule.name, m, rule.op, back), unit)}.")
    return {"summary": summary, "description": with_user(rule, desc), "runbook_url": runbook}


def render_rules(config: Config, rules: Sequence[Rule] | None = None) -> Rendered:
    """Alerting rules for the configured triggers (skipping metrics that have no exported series)."""
    rules = list(rules) if rules is not None else compile_rules(config.triggers)
    alerts: list[RenderedAlert] = []
    skipped: list[str] = []
    if config.notify.alertmanager_url:
        return Rendered([], [], sender=NOTIFIER_SENDS)
    for r in rules:
        name = alert_name(r.name)
        parts = _series(r, config.model)
        if parts is None:
            skipped.append(f"{r.name}: metric {r.metric!r} has no exported series")
            continue
        series, guard, on = parts
        alerts.append(RenderedAlert(
            alert=name, expr=_expr(r, name, series, guard, on),
            for_=format_duration(r.for_s) if r.for_s > 0 else None,
            keep_firing_for=format_duration(r.cooldown_s) if r.cooldown_s > 0 else None,
            labels={"severity": r.severity, "trigger": r.name},
            annotations=_annotations(r, name, config.model, config.notify.runbook_base_url)))
    return Rendered(alerts, skipped)


def _block(text: str, indent: int) -> list[str]:
    pad = " " * indent
    return [pad + ln if ln else "" for ln in text.rstrip("\n").split("\n")]


def to_yaml(rendered: Rendered, source: str | None = None) -> str:
    """The rule file text (groups → driftline-triggers), readable and stable for review in git."""
    out = ["# Trigger alerts generated by `driftline alerts render`"
           + (f" from {source}" if source else "") + ": do not edit by hand;",
           "# change the triggers in the config and re-render. Series and labels: docs/METRICS.md.",
           "# expr = judged series (point: the estimate; confident: the interval bound nearest the line) <op> line",
           "#        and the minimum-n guard (below it driftline reports insufficient_data and no alert fires).",
           "groups:", "  - name: driftline-triggers", "    rules:"]
    notes = [f"# {rendered.sender}."] if rendered.sender else []
    out[4:4] = notes + [f"# skipped {s}" for s in rendered.skipped]  # after the header's sentences, not inside one
    if not rendered.alerts:
        out[-1] = "    rules: []"
    for i, a in enumerate(rendered.alerts):
        if i:
            out.append("")
        out.append(f"      - alert: {a.alert}")
        out.append("        expr: |")
        out.extend(_block(a.expr, 10))
        if a.for_:
            out.append(f"        for: {a.for_}")
        if a.keep_firing_for:
            out.append(f"        keep_firing_for: {a.keep_firing_for}")
        out.append("        labels:")
        out.extend(f"          {k}: {json.dumps(v)}" for k, v in a.labels.items())
        out.append("        annotations:")
        for k, v in a.annotations.items():
            if k == "description":
                out.append(f"          {k}: >-")
                out.extend(_block(_wrap(v, 100), 12))
            else:
                out.append(f"          {k}: {json.dumps(v, ensure_ascii=False)}")
    return "\n".join(out) + "\n"


def _wrap(text: str, width: int) -> str:
    """Fold a long line at spaces outside template actions (a folded YAML scalar joins lines with spaces);
    a template action longer than the width stays on the line it starts on."""
    words: list[str] = []
    word, depth, i = "", 0, 0
    while i < len(text):
        if text.startswith("{{", i):
            depth, word, i = depth + 1, word + "{{", i + 2
            continue
        if text.startswith("}}", i):
            depth, word, i = max(0, depth - 1), word + "}}", i + 2
            continue
        if text[i] == " " and depth == 0:
            words.append(word)
            word = ""
        else:
            word += text[i]
        i += 1
    words.append(word)
    lines: list[str] = []
    cur = ""
    for w in (w for w in words if w):
        if not cur:
            cur = w
        elif len(cur) + 1 + len(w) <= width or len(w) > width:
            cur = f"{cur} {w}"
        else:
            lines.append(cur)
            cur = w
        if len(cur) > width:
            lines.append(cur)
            cur = ""
    if cur:
        lines.append(cur)
    return "\n".join(lines)
