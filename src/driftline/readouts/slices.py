"""`driftline slices`: recall, FPR, precision and alert rate per value of each configured slice feature, worst
first, and the worst slices against the agreed targets (moved from readouts/drift.py, which it outgrew)."""

from __future__ import annotations

import math
from typing import Any

from ..analysis.slices import slices_of, worst_slices
from ..config import Config
from ..core import slice_bound
from ..core.slice_bound import OTHER as SLICE_OTHER
from ..storage.store import Store
from ..targets import agreed_target
from .drift import _maturity, _window_json
from .headline import headline_variant, scope_json
from .matured_part import matured_split, maturing
from .slice_hints import carried_by_none, slice_hints
from .windows import Window, merged, window_rows


def slice_targets(config: Config) -> tuple[float | None, float | None]:
    """Target recall and FPR of the slice ranking: the agreed targets (config.targets, else the model-wide
    trigger lines, as the report's headline); None where nothing is agreed (no built-in domain's numbers)."""
    recall, fpr = agreed_target(config, "recall"), agreed_target(config, "fpr")
    return (None if recall is None else recall.value, None if fpr is None else fpr.value)


SLICES_AT_INGESTION = ("slice values are recorded at ingestion, only from when the feature was listed in `slices:`; "
                       "the raw features are not stored, so earlier predictions cannot be sliced afterwards: replay "
                       "the original events into a fresh database with this config to slice them")


def _unrecorded(feature: str, recorded: int, predictions: int, near: str | None = None) -> dict[str, Any]:
    """How many of the window's predictions have a recorded value of a slice feature, and a note when some
    have none (the feature was added to `slices:` after they were ingested), or none carries it (`near`: the
    known feature name closest to it, a likely typo)."""
    missing = predictions - recorded
    out: dict[str, Any] = {"recorded": recorded, "unrecorded": missing, "note": None, "did_you_mean": near}
    if near:  # a misspelled slice: every prediction's value is 'missing', or none was recorded
        out["note"] = (f"no feature {feature!r} is known (did you mean {near!r}?): no prediction in the window "
                       "carries it; fix `slices:`, then replay the events to slice them")
    elif missing > 0:
        out["note"] = (f"{missing:,} of {predictions:,} predictions in the window have no recorded value of "
                       f"{feature!r}: {SLICES_AT_INGESTION}")
    return out


MULTIPLICITY_FROM = 20
"""Ranked slice values from which `slices` says that some shortfalls are expected by chance."""


def multiplicity_note(ranked: int) -> str | None:
    """What chance alone puts among the worst slices when many values are ranked (toxicity tryout: 10,000 languages,
    the ranking led by 4-prediction slices): each value's recall and FPR are judged by their own 95 % interval, with
    no correction for the number of values, so a value that meets a target still lies beyond it with probability up
    to 2.5 % per metric (one-sided), up to ~5 % for the two. None below MULTIPLICITY_FROM values."""
    if ranked < MULTIPLICITY_FROM:
        return None
    return (f"{ranked:,} slice values were ranked, each by its own 95 % intervals with no correction for their "
            f"number: up to ~5 % of values that meet the targets (~{math.ceil(ranked * 0.05):,} here) can show a "
            "shortfall by chance; read a worst slice with its counts")


def slices_document(store: Store, config: Config, model: str, window: Window) -> dict[str, Any]:
    """`driftline slices --json`: per configured slice feature and value, recall, FPR, precision and alert
    rate with Wilson intervals and counts (indicative below 30 labelled), and the worst slices ranked by
    how far their interval misses the targets."""
    rows = window_rows(store, model, window, headline_variant(config.ab, None), features=False)
    stats = merged(rows)
    old_rows, young = matured_split(rows, maturing(store, config), "the slices' FPR and precision (and the "
                                    "ranking by FPR)")
    t_recall, t_fpr = slice_targets(config)
    per = slices_of(stats.slices, config.slices, t_recall, t_fpr,
                    None if old_rows is None else merged(old_rows).slices)
    unsliced = carried_by_none(per)  # its one slice, 'missing', is the whole window: never a worst slice
    near = slice_hints(store, config, model, window, stats, unsliced) if stats.predictions else {}
    doc: dict[str, Any] = {
        "model": model, "scope": scope_json(config.ab, None), "window": _window_json(window, stats),
        "targets": {"recall": t_recall, "fpr": t_fpr},
        "features": [{"feature": f, "values": [s.to_json() for s in vals],
                      **_unrecorded(f, sum(v.predictions for v in vals), stats.predictions, near.get(f))}
                     for f, vals in per.items()],
        "worst": [s.to_json() for s in worst_slices(s for f, vals in per.items() if f not in unsliced for s in vals
                                                     if s.value != SLICE_OTHER)],
    }
    for feat in doc["features"]:
        if any(v["value"] == SLICE_OTHER for v in feat["values"]):
            folded = (f"{SLICE_OTHER} sums the values past the {slice_bound.MAX_SLICE_VALUES:,} an hour (or a "
                      "compacted day) keeps apart, chosen by a fixed hash of the value, so mostly the same ones in "
                      "every bucket: a value's own counts cover the buckets that kept it; not ranked")
            feat["note"] = "; ".join(n for n in (feat.get("note"), folded) if n)
    ranked = sum(s.shortfall is not None for f, vals in per.items() if f not in unsliced for s in vals
                 if s.value != SLICE_OTHER)
    doc["ranked_values"] = ranked
    doc["multiplicity"] = multiplicity_note(ranked)
    doc["label_maturity"] = _maturity(store, config, model, window, doc["window"], "slices")
    if not config.slices:
        doc["note"] = "no slice features configured: add e.g. `slices: [country, channel]` to the config"
    elif young:
        doc["note"] = young
    return doc
