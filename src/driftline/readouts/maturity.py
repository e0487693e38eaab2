"""Label maturity: why a window has no (or few) labels, and the newest window whose labels have arrived.

A window's labels have matured when its end lies at least the 95th-percentile label delay (from the model's
stored label-delay histogram; `labels.implicit_negative_after` under the implicit policy) before the newest
event stored. With month-long delays the default 7-day window never has, so every rate is "— (n=0)" (issue 17):
the readouts say why and `--matured` picks the newest matured window instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.classification import delay_quantiles, delay_upper
from ..analysis.label_arrival import labels_later_than, late_labels
from ..analysis.rates import INDICATIVE_BELOW_N
from ..config import Config
from ..core.events import iso
from ..numbers import duration
from ..storage.bucket_row import BucketRow
from ..storage.compaction import COMPACTED_SHARD, DAY_S
from ..storage.store import Store
from ..storage.summaries import delay_histogram
from .windows import Window

METHOD_TEXT = {"label_delay_p95": "95th-percentile label delay",
               "labels.implicit_negative_after": "`labels.implicit_negative_after`",
               "given": "as given"}
"""How a maturity period was decided, in words for people (the JSON keeps the key)."""
MATURITY_QUANTILE = 0.95
"""Labels of a window count as matured one p95 label delay after it (explicit-outcome policy)."""


def method_text(method: str | None) -> str:
    """The words for a maturity method key ('label_delay_p95' -> '95th-percentile label delay')."""
    return METHOD_TEXT.get(method or "", method or "—")


@dataclass(frozen=True, slots=True)
class Maturity:
    """How long labels take for a model, where that came from, and the newest matured window end."""

    median_s: float | None
    p95_s: float | None
    labels: int
    source: str
    matured_end: float | None
    """End of the newest window (of the asked length) whose labels have matured; None when none has."""

    def to_json(self) -> dict[str, Any]:
        return {"median_delay_s": self.median_s, "p95_delay_s": self.p95_s, "delay_labels": self.labels,
                "delay_source": self.source, "matured_at": None if self.matured_end is None else iso(self.matured_end)}


def maturity_wait(config: Config, delay_hist: np.ndarray | None) -> tuple[float | None, str]:
    """How long after prediction labels count as arrived, and the method key: `implicit_negative_after` under that
    policy, else the upper edge of the delay bin holding the p95 (delay_upper), never the bin's middle, which reads
    up to 4.3 % short. The one rule behind `--matured`, calibration's look-back and the report's `matures_at`."""
    implicit = config.labels.implicit_after_s
    if implicit is not None:
        return implicit, "labels.implicit_negative_after"
    return (None if delay_hist is None else delay_upper(delay_hist, MATURITY_QUANTILE)), "label_delay_p95"


def label_maturity(store: Store, config: Config, model: str | None, window_s: float) -> Maturity:
    """The model's label delays (whole stored history) and the end of the newest matured window of `window_s`."""
    hist, first = delay_histogram(store, model)
    n = int(hist.sum())
    q = delay_quantiles(hist) if n else {"p50": None, "p95": None}
    wait, method = maturity_wait(config, hist)
    source = method if method == "labels.implicit_negative_after" else "stored label-delay histogram"
    newest = store.newest_event()
    end = None
    if wait is not None and newest is not None and first is not None:
        b = config.bucket_s
        candidate = math.floor((newest - wait) / b) * b
        end = float(candidate) if candidate - window_s >= first else None
    return Maturity(q["p50"], q["p95"], n, source, end)


def few_predictions_note(predictions: int) -> str:
    """The note of a window whose every prediction is labelled but which holds fewer than 30: its rates are
    indicative because the window is small, not because labels are late."""
    return (f"only {predictions:,} prediction{'s' if predictions != 1 else ''} in this window, all labelled: fewer "
            f"than {INDICATIVE_BELOW_N} labelled make every rate indicative (*); a longer `--window` holds more")


def maturity_hint(store: Store, config: Config, model: str | None, window: Window, predictions: int,
                  labelled: int, command: str = "metrics") -> dict[str, Any] | None:
    """Why a window with predictions has fewer than 30 labelled ones, and which window to read instead (JSON
    fields: `note` and the Maturity fields); None when the window has enough labels or no predictions."""
    if predictions == 0 or labelled >= INDICATIVE_BELOW_N:
        return None
    m = label_maturity(store, config, model, window.seconds)
    have = f"{labelled:,} of {predictions:,} predictions labelled"
    if labelled == predictions:  # nothing is missing: waiting for labels would not help, the window is small
        return {"note": few_predictions_note(predictions), "labelled": labelled, "predictions": predictions,
                **m.to_json()}
    if predictions < INDICATIVE_BELOW_N:
        have += f"; even all {predictions:,} would be fewer than {INDICATIVE_BELOW_N}"
    if m.labels == 0 and m.source != "labels.implicit_negative_after":
        note = f"no labels stored for this model yet ({have}): label delay unknown"
    else:
        delay = (f"median label delay {duration(m.median_s)}, 95th percentile {duration(m.p95_s)}, from the stored "
                 f"label-delay histogram ({m.labels:,} labels)")
        if m.source == "labels.implicit_negative_after":
            delay = f"labels count as matured after labels.implicit_negative_after ({duration(config.labels.implicit_after_s)})"
        young = m.matured_end is None or window.end > m.matured_end
        arrived = "have not arrived yet" if labelled == 0 else "have not all arrived yet"
        note = (f"labels for this window {arrived} ({have}): {delay}" if young else
                f"this window's labels should have arrived but {'none' if labelled == 0 else 'some'} did not "
                f"({have}): {delay}")
        if young:
            note += ("; no window has matured labels yet" if m.matured_end is None else
                     f"; the newest window with matured labels ends {iso(m.matured_end)}: `driftline {command} "
                     f"--at {iso(m.matured_end)}` or `--matured`")
    return {"note": note, "labelled": labelled, "predictions": predictions, **m.to_json()}


def late_labels_hint(rows: Sequence[BucketRow], bucket_s: int, at: float) -> dict[str, Any] | None:
    """For a window ending at an explicit `--at`: how many of its labels arrived at or after it (the readout uses
    the labels known now, which a live reading at `at` had not seen), with the note saying so; None when none can
    have (churn tryout: `alerts evaluate --at` fired a recall alert at 2026-06-15 on labels that came 30–60 d
    later, and the README said a backtest equals what a live evaluation saw)."""
    late = late_labels(((r.bucket_start, DAY_S if r.shard == COMPACTED_SHARD else bucket_s, r.stats.delay)
                        for r in rows), at)
    if late.maybe_after == 0:
        return None
    some = (f"at least {late.surely_after:,} of this window's {late.labels:,} labels arrived after it"
            + (f" (up to {late.maybe_after:,})" if late.maybe_after > late.surely_after else "")
            if late.surely_after else
            f"up to {late.maybe_after:,} of this window's {late.labels:,} labels may have arrived after it")
    note = (f"labels as known now, not at --at {iso(at)}: {some}, by the label-delay histogram; a live reading "
            f"at that time had not seen them, so its labelled metrics rested on fewer labels (or none)")
    return {"note": note, **late.to_json()}


LABEL_FREE = frozenset({"alert_rate", "dead_letter_rate", "silence_seconds", "psi", "js", "drifted",
                        "multivariate_drift", "multivariate_drifted"})
"""Trigger metrics read without labels (a backtest of them sees no label from its future)."""


def backtest_late_labels(store: Store, config: Config, model: str | None, rules: Sequence[Any], at: float
                         ) -> list[dict[str, Any]]:
    """For each window length of the label-reading triggers (`canonical` metric not in LABEL_FREE), the labels of
    the window ending at `at` that arrived at or after `at` (late_labels_hint), with the window and the triggers;
    only windows some of whose labels can have arrived later. None can once `at` is past the newest outcome stored:
    a label arrives with its outcome (verify tryout: `--at` the end of a replayed history said "up to 83 of this
    window's 957 labels may have arrived after it", the delay bins reaching past it, when every one had come)."""
    newest_outcome = store.newest_event("outcome")
    if newest_outcome is None or newest_outcome < at:
        return []
    from ..metric_names import canonical
    from .headline import headline_rows
    from .windows import window_ending, window_rows
    by_window: dict[float, list[str]] = {}
    for r in rules:
        if canonical(r.metric) not in LABEL_FREE:
            by_window.setdefault(r.window_s, []).append(r.name)
    out = []
    for window_s, names in sorted(by_window.items()):
        window = window_ending(at, window_s, config.bucket_s)
        rows = headline_rows(config.ab, window_rows(store, model, window, features=False))
        hint = late_labels_hint(rows, config.bucket_s, at)
        if hint is not None:
            out.append({"window": window.to_json(), "triggers": names, **hint})
    return out


LATE_SHARE = 0.05
"""Share of explicit labels arriving after `implicit_negative_after` from which the readouts warn (with LATE_MIN)."""
LATE_MIN = 10
"""Labels past `implicit_negative_after` below which no warning is given, whatever their share."""


def implicit_too_early(config: Config, delay_hist: np.ndarray, model: str | None) -> str | None:
    """The warning that labels keep arriving after `labels.implicit_negative_after` (credit tryout: defaults
    30–90 days late against 60 days: the matured part counted late defaults as goods, precision read 0.258 for
    ~0.44, prevalence "drifted" low, and calibration called the right estimate NOT TRUSTED), from the model's
    label-delay histogram (whole history); None under the explicit policy or when few labels come that late."""
    after = config.labels.implicit_after_s
    if after is None:
        return None
    late, total = labels_later_than(delay_hist, after)
    if late < LATE_MIN or late < LATE_SHARE * total:
        return None
    upper = delay_upper(delay_hist, MATURITY_QUANTILE)
    fix = "" if upper is None or upper <= after else f" to at least {math.ceil(upper / 86400.0)}d (the 95th " \
        "percentile's bin)"
    return (f"labels of model {model!r} keep arriving after `labels.implicit_negative_after` ({duration(after)}): "
            f"{late:,} of {total:,} explicit labels ({late / total:.1%}) came later, so a prediction older than "
            f"that is counted as a negative until its late positive arrives: the matured part reads precision and "
            f"prevalence low and FPR high. Set `labels.implicit_negative_after`{fix}")


def implicit_too_early_note(store: Store, config: Config, model: str | None) -> str | None:
    """implicit_too_early over the model's stored label delays (a read of every bucket's delay bins: for the
    interactive readouts, not the metrics query)."""
    if config.labels.implicit_after_s is None:
        return None
    return implicit_too_early(config, delay_histogram(store, model)[0], model)
