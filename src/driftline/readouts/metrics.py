"""The `metrics` query: window selection, merging and the JSON document of the contract."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..analysis.classification import Metrics
from ..config import Config
from ..core.labels import VARIANT, VERSION, overflow_counter
from ..core.events import iso
from ..core.stats import UNL
from ..storage.store import Store
from .headline import (headline_rows, headline_total, headline_variant, missing_control_note, scope_json,
                       shared_id_note, shared_model_note)
from .maturity import maturity_hint
from .matured_part import maturing
from .ranking import split_metrics, window_metrics
from .windows import (Window, cut_days, cut_days_note, default_at, flags_in_force, merged, window_ending,
                      window_rows)


@dataclass(frozen=True, slots=True)
class MetricsQuery:
    """Which predictions a metrics document covers."""

    model: str | None
    window_s: float
    at: float | None = None
    variant: str | None = None
    model_version: str | None = None


def resolve_window(store: Store, config: Config, model: str | None, window_s: float, at: float | None
                   ) -> Window | None:
    """The window ending at `at`, or at the newest prediction stored; None when nothing is stored."""
    if at is None:
        at = default_at(store, model, config.bucket_s)
        if at is None:
            return None
    return window_ending(at, window_s, config.bucket_s)


def metrics_document(store: Store, config: Config, q: MetricsQuery) -> dict[str, Any]:
    """`driftline metrics --json`: counts, rates with Wilson intervals, ranking and calibration."""
    window = resolve_window(store, config, q.model, q.window_s, q.at)
    doc: dict[str, Any] = {"model": q.model, "variant": q.variant, "model_version": q.model_version,
                           "threshold": config.threshold}
    empty = window is None
    if window is None:  # nothing stored yet: an empty window, reported with null bounds
        window = window_ending(0.0, q.window_s, config.bucket_s)
        rows = []
    else:
        rows = window_rows(store, q.model, window, q.variant, q.model_version, features=False)
    groups: dict[tuple[str, str], list[Any]] = {}
    for r in rows:
        groups.setdefault((r.variant, r.model_version), []).append(r)
    group_stats = {key: merged(rs) for key, rs in sorted(groups.items())}
    total = headline_total(config.ab, group_stats, q.variant)  # shadow mode: the production arm only
    mat = None if empty else maturing(store, config)
    m: Metrics = window_metrics(store, q.model, window, headline_rows(config.ab, rows, q.variant), total,
                                headline_variant(config.ab, q.variant), q.model_version, mat)
    doc["scope"] = scope_json(config.ab, q.variant, (v for v, _ in group_stats))
    missing = missing_control_note(doc["scope"], (v for v, _ in group_stats))
    doc["window"] = window.to_json()
    if empty:
        doc["window"].update(start=None, end=None)
        doc["note"] = "no predictions stored yet"
    else:
        cut = cut_days(store, q.model, window)
        doc["window"]["cut_days"] = [iso(d) for d in cut]
        if cut:
            doc["note"] = cut_days_note(cut)
        if missing:
            doc["note"] = "; ".join(n for n in (doc.get("note"), missing) if n)
        if not total.predictions and not missing:
            elsewhere = stored_elsewhere(store, q.model, window, config.bucket_s)
            if elsewhere:
                doc["note"] = "; ".join(n for n in (doc.get("note"), elsewhere) if n)
    doc.update(m.to_json())
    flags = flags_in_force(headline_rows(config.ab, rows, q.variant), config.threshold)
    doc.update(threshold=flags.value, threshold_in_force=flags.to_json(), config_threshold=config.threshold)
    doc["by_variant"] = [{"variant": v, "model_version": mv, **_brief(split_metrics(groups[(v, mv)], st, mat))}
                         for (v, mv), st in group_stats.items()]
    if m.matured is not None:
        doc["note"] = "; ".join(n for n in (doc.get("note"), m.matured.note()) if n)
    doc["label_maturity"] = None if empty else maturity_hint(store, config, q.model, window, total.predictions,
                                                             total.predictions - int(total.conf[UNL].sum()),
                                                             "metrics")
    counters = store.counters()
    shared = None if q.variant is not None or empty else shared_id_note(config.ab, counters, q.model)
    across = None if empty else shared_model_note(counters, q.model)
    if shared or across:
        doc["note"] = "; ".join(n for n in (doc.get("note"), shared, across) if n)
    doc["label_overflow"] = {kind: counters.get((overflow_counter(kind), q.model), 0) for kind in (VARIANT, VERSION)}
    return doc


def stored_elsewhere(store: Store, model: str | None, window: Window, bucket_s: int) -> str | None:
    """The note for a window wholly before or after the model's stored predictions: where they lie, and the --at
    that ends a window at the newest (`metrics --at 2030-01-01`, a wrong year, printed an all-empty table and no
    hint). None when nothing is stored or the window overlaps them (a quiet spell is no mistake)."""
    rng = store.bucket_range(model)
    if rng is None or window.start < rng[1] + bucket_s and window.end > rng[0]:
        return None
    newest = default_at(store, model, bucket_s)
    end = iso(newest if newest is not None else rng[1] + bucket_s)
    who = f"model '{model}'" if model is not None else "any model"
    return (f"no predictions in this window; the stored predictions of {who} lie in {iso(rng[0])} → {end} "
            f"(`--at {end}` ends a window at the newest)")


def _brief(m: Metrics) -> dict[str, Any]:
    return {"counts": m.counts.to_json(), "label_coverage": m.label_coverage.to_json(),
            "metrics": {k: m.rates[k].to_json() for k in ("recall", "fpr", "precision", "alert_rate")}}
