"""Per-window metric families of a scrape (rates, counts, scores, estimates) and the builder collecting them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ..analysis.classification import Metrics, classification
from ..config import AB
from ..core.stats import BucketStats
from ..readouts.absent import READOUTS, REASONS
from ..readouts.drift import MultivariateReading
from ..readouts.headline import headline_rows, headline_variant
from ..readouts.matured_part import Maturing
from ..readouts.ranking import window_metrics
from ..readouts.windows import Window
from ..storage.bucket_row import BucketRow
from ..storage.store import Store
from ..triggers.rules import AGGREGATE
from ..triggers.runner import group_stats
from .names import COUNT_HELP, ESTIMATED_RATES, RATE_HELP, SCORE_HELP

WINDOWED = ["model", "model_version", "variant", "window"]


@dataclass(frozen=True, slots=True)
class Group:
    """One labelled set of series: the whole model or one (variant, model_version)."""

    variant: str
    model_version: str
    metrics: Metrics


def groups_of(rows: list[BucketRow], store: Store | None = None, model: str | None = None,
              window: Window | None = None, ab: AB | None = None, mat: Maturing | None = None) -> list[Group]:
    """The whole-model group then one group per (variant, model_version), each with its metrics (ROC AUC and
    average precision as `driftline metrics --json`, exact when needed, given the store, model and window). The
    whole model sums the rows readouts.headline keeps: in shadow mode (`ab`) the production arm only. With `mat`
    (implicit-negative policy) the negative-reading metrics come from the window's matured part, as in `metrics`."""
    if not rows:
        return []
    ab = AB() if ab is None else ab
    total, by = group_stats(rows, ab)

    def metrics(st: BucketStats, sel: list[BucketRow], variant: str | None, mv: str | None) -> Metrics:
        if store is None or window is None:
            return classification(st)
        return window_metrics(store, model, window, sel, st, variant, mv, mat)

    return [Group(AGGREGATE, AGGREGATE, metrics(total, headline_rows(ab, rows), headline_variant(ab, None), None))] + [
        Group(v, mv, metrics(st, [r for r in rows if (r.variant, r.model_version) == (v, mv)], v, mv))
        for (v, mv), st in by.items()]


def multivariate_series(r: MultivariateReading) -> list[tuple[str, str, float | None]]:
    """(name suffix, help, value) of the multivariate drift series of one window."""
    return [("ratio", "Mean PCA reconstruction error of the window's feature sample over the reference's "
                      "(1 = as expected).", r.ratio),
            ("reconstruction_error", "Mean PCA reconstruction error of the window's feature sample "
                                     "(standardised units).", r.error),
            ("p_value", "Permutation p-value of the window's reconstruction error against the reference's.",
             r.p_value),
            ("drifted", "1 when the multivariate drift test says drifted (p < drift.alpha).", float(r.drifted)),
            ("sample_rows", "Feature vectors of the window's sample behind the statistic.", float(r.n))]


def _sentence(text: str) -> str:
    """A help text as a sentence: first letter upper-cased, the rest kept (str.capitalize lowered 'TP' to 'tp')."""
    return text[:1].upper() + text[1:] + "."


class _Families:
    """Metric families under construction, created on first use so empty families are not exported."""

    def __init__(self) -> None:
        self.fams: dict[str, Metric] = {}

    def gauge(self, name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
        if name not in self.fams:
            self.fams[name] = GaugeMetricFamily(name, doc, labels=labels)
        return self.fams[name]  # type: ignore[return-value]

    def counter(self, name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
        if name not in self.fams:
            self.fams[name] = CounterMetricFamily(name, doc, labels=labels)
        return self.fams[name]  # type: ignore[return-value]

    def summary(self, name: str, doc: str) -> Metric:
        if name not in self.fams:
            self.fams[name] = Metric(name, doc, "summary")
        return self.fams[name]


def add_window(f: _Families, model: str, window: str, groups: list[Group]) -> None:
    """Rates with interval bounds, window counts, ranking/calibration scores and label delay of one window."""
    for g in groups:
        lv = [model, g.model_version, g.variant, window]
        m = g.metrics
        for name, helptext in RATE_HELP.items():
            r = m.label_coverage if name == "label_coverage" else m.rates[name]
            if r.value is None:
                continue
            f.gauge(f"driftline_{name}_ratio", _sentence(helptext), WINDOWED).add_metric(lv, r.value)
            f.gauge(f"driftline_{name}_lower_ratio", f"Lower bound of the 95% Wilson interval of {name}.",
                    WINDOWED).add_metric(lv, r.low)
            f.gauge(f"driftline_{name}_upper_ratio", f"Upper bound of the 95% Wilson interval of {name}.",
                    WINDOWED).add_metric(lv, r.high)
        c = m.counts
        for name, value in (("predictions", c.predictions), ("labelled", c.labelled), ("positives", c.positives),
                            ("true_positives", c.tp), ("false_positives", c.fp)):
            f.gauge(f"driftline_window_{name}", COUNT_HELP[name], WINDOWED).add_metric(lv, float(value))
        if m.matured is not None:  # implicit-negative policy, a window reaching into the maturity period
            mc = m.matured.counts  # the n of the negative-reading metrics: the rendered rules' min_n guards
            for name, value in (("matured_predictions", mc.predictions),
                                ("awaiting_implicit", m.matured.awaiting_implicit),
                                ("matured_labelled", mc.labelled), ("matured_positives", mc.positives),
                                ("matured_true_positives", mc.tp), ("matured_false_positives", mc.fp)):
                f.gauge(f"driftline_window_{name}", COUNT_HELP[name], WINDOWED).add_metric(lv, float(value))
        scores = {"roc_auc": m.roc_auc, "average_precision": m.average_precision, "brier": m.brier,
                  "log_loss": m.log_loss, "ece": m.reliability.ece}
        for key, value in scores.items():
            if value is not None:
                name, helptext = SCORE_HELP[key]
                f.gauge(name, helptext, WINDOWED).add_metric(lv, float(value))
        for series, ci, what in (("driftline_roc_auc", m.ranking.roc_auc_interval, "DeLong interval of ROC AUC"),
                                 ("driftline_average_precision", m.ranking.average_precision_interval,
                                  "logit interval of average precision")):
            if ci is not None:
                f.gauge(f"{series}_lower", f"Lower bound of the 95% {what} (widened by its error bound).",
                        WINDOWED).add_metric(lv, ci[0])
                f.gauge(f"{series}_upper", f"Upper bound of the 95% {what} (widened by its error bound).",
                        WINDOWED).add_metric(lv, ci[1])
        for name, bound in (("driftline_roc_auc_error_bound", m.ranking.roc_auc_bound),
                            ("driftline_average_precision_error_bound", m.ranking.average_precision_bound)):
            if bound is not None:
                f.gauge(name, "Largest possible |exported value - exact value| (0 when computed exactly from the "
                        "held scores; else the score-histogram bound).", WINDOWED).add_metric(lv, float(bound))
        for q, key in (("0.5", "p50"), ("0.95", "p95")):
            value = m.label_delay_s.get(key)
            if value is not None:
                fam = f.summary("driftline_label_delay_seconds",
                                "Quantiles of outcome time minus prediction time for labelled predictions.")
                fam.add_sample("driftline_label_delay_seconds",
                               dict(zip(WINDOWED, lv), quantile=q), float(value))
        if m.label_delay_s.get("p50") is not None:  # the quantiles' n (implicit negatives have no delay): the
            f.summary("driftline_label_delay_seconds", "").add_sample(  # label-delay triggers' min_n guard
                "driftline_label_delay_seconds_count", dict(zip(WINDOWED, lv)),
                float(c.labelled - c.implicit_negatives))


def add_unavailable(f: _Families, model: str, window: str, readout: str, reason: str | None) -> None:
    """driftline_readout_unavailable{readout, reason} 1 for a readout of the window that is absent (reason None:
    it is exported); reasons from the fixed readouts.absent.REASONS, so the label stays bounded."""
    if reason is None:
        return
    assert readout in READOUTS and reason in REASONS, (readout, reason)
    f.gauge("driftline_readout_unavailable", "Always 1; a per-window readout (estimated: the label-free estimates, "
            "multivariate: multivariate drift) that is absent, and why (docs/METRICS.md lists the reasons).",
            ["model", "window", "readout", "reason"]).add_metric([model, window, readout, reason], 1.0)


def add_estimated(f: _Families, model: str, window: str, block: dict[str, Any] | None) -> None:
    """driftline_estimated_*: label-free metrics from scores calibrated on the active reference's labels, their
    delta-method bounds, whether the estimate can be trusted, and whether matured labels contradicted it."""
    if block is None:
        return
    lbl, lv = ["model", "window"], [model, window]
    for name in ESTIMATED_RATES:
        e = block[name]
        if e["value"] is None:
            continue
        f.gauge(f"driftline_estimated_{name}_ratio", f"Label-free estimate of {name} (scores calibrated on the "
                "reference's labels; assumes its score-label relation).", lbl).add_metric(lv, e["value"])
        f.gauge(f"driftline_estimated_{name}_lower_ratio", f"Lower 95% bound of the estimated {name}.",
                lbl).add_metric(lv, e["low"])
        f.gauge(f"driftline_estimated_{name}_upper_ratio", f"Upper 95% bound of the estimated {name}.",
                lbl).add_metric(lv, e["high"])
    f.gauge("driftline_estimated_trusted", "1 when the label-free estimate can be trusted (reference labels, "
            "support, not contradicted by labels).", lbl).add_metric(lv, 1.0 if block["trusted"] else 0.0)
    matured, own = block["matured"], block.get("window_labels") or {}
    if matured is not None or own.get("checked"):  # second tryout: the window's own labels were not exported
        bad = bool(matured and matured["contradicted"]) or bool(own.get("contradicted"))
        f.gauge("driftline_estimated_contradicted", "1 when labels contradict the estimate (the score-label "
                "relation changed): matured labels one maturity period earlier, or the window's own once half "
                "of it is labelled.", lbl).add_metric(lv, 1.0 if bad else 0.0)
