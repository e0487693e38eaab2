"""Scrape-time snapshot of the store as Prometheus metric families (names: docs/METRICS.md).

Every scrape rebuilds the families from the database (no stale label sets), cached for `cache_s` so scrapes in
quick succession share one read. Windowed series exist per model, per configured window (config window and
trigger windows) for the whole model (`variant="all", model_version="all"`) and per (variant, model_version);
a rate whose denominator is 0 is absent, never 0 or NaN.

Replicas over one database would export the same numbers once each, and dashboards and rules that sum across
instances would count them twice. So only the replica holding the exporter lock (a PostgreSQL advisory lock or a
SQLite lock file; another replica takes it over at its next scrape when that one stops) exports the series read from the database; every replica exports `driftline_leader` (1 or 0), build_info and
its own process metrics (consumer lag of its partitions, batch durations, notifications).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from prometheus_client.core import Metric

from .. import __version__
from ..streak import FailureStreak, first_line
from ..config import Config
from ..durations import format_duration
from ..core.engine import CONFLICTING, IMPLICIT_RELABELLED, SHARED_MODELS
from ..core.events import DEAD_LETTER_REASONS
from ..core.labels import MODEL, OVERFLOW, VARIANT, VERSION, overflow_counter
from ..readouts.absent import ESTIMATED, MULTIVARIATE, estimated_absence
from ..readouts.drift import MultivariateReading, active_reference_seasons, estimated_block, multivariate_outcome
from ..readouts.headline import headline_rows
from ..readouts.matured_part import maturing
from ..readouts.seasonal import fallback_predictions
from ..storage.errors import SchemaMissing, StoreUnavailable
from ..storage.store import Store
from ..triggers import history
from ..triggers.definition import CURRENT, definition
from ..triggers.drift_hook import DriftProvider
from ..triggers.metrics import canonical
from ..triggers.model import FIRING, STATES, Rule
from ..triggers.runner import compile_rules
from ..readouts.windows import Window, default_at, window_ending, window_rows
from .label_text import escape_labels
from .names import LABEL_COUNTERS
from .window_series import _Families, add_estimated, add_unavailable, add_window, groups_of, multivariate_series

log = logging.getLogger(__name__)

EVENT_TYPES = ("prediction", "outcome")
EVENTS_SOURCE = "all"
"""`source` label of driftline_events_total: the store counts accepted events over every source together."""


def windows_of(config: Config, rules: Sequence[Rule]) -> list[float]:
    """Window lengths exported: the config window plus every trigger window, shortest first."""
    return sorted({config.window_s, *(r.window_s for r in rules)})


class SnapshotCollector:
    """prometheus_client custom collector reading the store at scrape time (cached for `cache_s` seconds).

    `time_basis` "wall": windows end at the injected clock (`[now − window, now)`); "event": at the newest
    prediction stored, for a database fed by replaying history.
    """

    def __init__(self, store: Store, config: Config, clock: Callable[[], float] = time.time, *,
                 time_basis: str = "wall", drift: DriftProvider | None = None, cache_s: float = 2.0,
                 monotonic: Callable[[], float] = time.monotonic, schema_ready: threading.Event | None = None,
                 leader: Callable[[], bool] | None = None) -> None:
        if time_basis not in ("wall", "event"):
            raise ValueError(f"time_basis must be 'wall' or 'event', got {time_basis!r}")
        self.store, self.config, self.clock = store, config, clock
        self.time_basis, self.drift, self.cache_s, self.monotonic = time_basis, drift, cache_s, monotonic
        self.rules = compile_rules(config.triggers)
        self.schema_ready = schema_ready
        """While given and not set (the schema is being migrated), scrapes serve build_info only."""
        self.leader = leader
        """Whether this replica holds the leader lock (None: a single process, always exports the store)."""
        self._lock = threading.Lock()
        self._cache: tuple[float, list[Metric]] | None = None
        self.snapshots = FailureStreak("metrics snapshot", log, monotonic=monotonic)
        """Snapshots skipped for an outage, logged by streak (one line per snapshot flooded the log; tryout)."""
        self.builds = 0

    def collect(self) -> Iterable[Metric]:
        """The cached snapshot, rebuilt when older than cache_s."""
        with self._lock:
            now = self.monotonic()
            if self._cache is None or now - self._cache[0] >= self.cache_s:
                self._cache = (now, self.snapshot())
            return list(self._cache[1])

    def invalidate(self) -> None:
        """Drop the cached snapshot (after a trigger evaluation, so the next scrape shows the new states)."""
        with self._lock:
            self._cache = None

    def window_end(self, model: str) -> float | None:
        """Where this model's windows end: the clock, or the newest prediction (event basis)."""
        if self.time_basis == "event":
            return default_at(self.store, model, self.config.bucket_s)
        return float(self.clock())

    def snapshot(self) -> list[Metric]:
        """Build every family from the store now, label values escaped (label_text); on a database error only
        build_info and the time basis are returned (logged)."""
        self.builds += 1
        return escape_labels(self._build())

    def _build(self) -> list[Metric]:
        f = _Families()
        f.gauge("driftline_build_info", "Always 1; the running driftline version.", ["version"]).add_metric(
            [__version__], 1.0)
        f.gauge("driftline_time_basis", "Always 1; where windows end: wall (the clock, live data) or event (the "
                "newest prediction: replayed history, no flow expected).", ["basis"]).add_metric([self.time_basis], 1.0)
        always = [f.fams["driftline_build_info"], f.fams["driftline_time_basis"]]
        if self.schema_ready is not None and not self.schema_ready.is_set():
            return always
        if self.leader is not None:
            leading = self.leader()
            f.gauge("driftline_leader", "1 on the replica that exports the series read from the database (it holds "
                    "the exporter lock); 0 on a standby replica.", []).add_metric([], 1.0 if leading else 0.0)
            if not leading:
                return list(f.fams.values())
        try:
            self._models(f)
            self._triggers(f)
            self._pipeline(f)
        except SchemaMissing:
            raise  # no outage to wait out: the scrape answers 503 naming it (http.py)
        except StoreUnavailable as err:
            self.snapshots.failed(RuntimeError(f"database unavailable: {first_line(err)}"))
            return always
        self.snapshots.succeeded()
        return list(f.fams.values())

    def _models(self, f: _Families) -> None:
        windows = windows_of(self.config, self.rules)
        mat = maturing(self.store, self.config)
        for model in self.store.models():
            at = self.window_end(model)
            if at is None:
                continue
            seasonal = self._seasonality(f, model) if self.drift is not None else None
            for length in windows:
                w = window_ending(at, length, self.config.bucket_s)
                label = format_duration(length)
                rows = window_rows(self.store, model, w, features=False)
                add_window(f, model, label, groups_of(rows, self.store, model, w, self.config.ab, mat))
                if self.drift is not None:
                    self._drift(f, model, label, w)
                    self._multivariate(f, model, label, w)
                if seasonal is not None:
                    f.gauge("driftline_drift_season_fallback_predictions", "Window predictions compared with the "
                            "whole reference because their season's slice is thin, missing or unplaceable.",
                            ["model", "window"]).add_metric(
                        [model, label], float(fallback_predictions(seasonal, headline_rows(self.config.ab, rows), self.config)))
                block = estimated_block(self.store, self.config, model, w)
                add_estimated(f, model, label, block)
                add_unavailable(f, model, label, ESTIMATED, estimated_absence(block))

    def _seasonality(self, f: _Families, model: str) -> Any:
        """driftline_reference_seasonality_info of the model's active reference; its seasonal slices (or None)."""
        active = active_reference_seasons(self.store, model)
        if active is None:
            return None
        f.gauge("driftline_reference_seasonality_info", "Always 1; the seasonality of the model's active drift "
                "reference (none, hour_of_day, day_of_week, both).", ["model", "seasonality"]).add_metric(
            [model, active[0].seasonality], 1.0)
        return active[2]

    def _drift(self, f: _Families, model: str, label: str, window: object) -> None:
        assert self.drift is not None
        for r in self.drift(self.store, self.config, model, window, None):  # type: ignore[arg-type]
            if r.feature is None:
                if r.psi is not None:
                    f.gauge("driftline_score_psi", "Population stability index of the model score vs reference.",
                            ["model", "window"]).add_metric([model, label], r.psi)
                continue
            lv = [model, label, r.feature]
            lbl = ["model", "window", "feature"]
            if r.psi is not None:
                f.gauge("driftline_feature_psi", "Population stability index of a feature vs reference.",
                        lbl).add_metric(lv, r.psi)
            if r.js is not None:
                f.gauge("driftline_feature_js_distance", "Jensen-Shannon distance (base 2) of a feature vs reference.",
                        lbl).add_metric(lv, r.js)
            if r.drifted is not None:
                f.gauge("driftline_feature_drifted", "1 when the feature's drift test says drifted.",
                        lbl).add_metric(lv, 1.0 if r.drifted else 0.0)

    def _multivariate(self, f: _Families, model: str, label: str, window: Window) -> None:
        """driftline_multivariate_drift_*: the window's PCA reconstruction error against the reference's (or why
        there is none: driftline_readout_unavailable)."""
        r = multivariate_outcome(self.store, self.config, model, window, None)
        if not isinstance(r, MultivariateReading):
            add_unavailable(f, model, label, MULTIVARIATE, r)
            return
        lbl, lv = ["model", "window"], [model, label]
        for name, doc, value in multivariate_series(r):
            if value is not None:
                f.gauge(f"driftline_multivariate_drift_{name}", doc, lbl).add_metric(lv, float(value))

    def _triggers(self, f: _Families) -> None:
        if not self.rules:
            return
        model = self.config.model
        states = history.load_states(self.store, model)
        lbl = ["model", "trigger", "severity"]
        for r in self.rules:
            s = states.get(r.name)
            lv = [model, r.name, r.severity]
            f.gauge("driftline_trigger_threshold", "The pre-agreed line of the trigger (metric: what it judges).",
                    lbl + ["metric"]).add_metric(lv + [canonical(r.metric)], r.value)
            f.gauge("driftline_trigger_min_n", "The trigger's minimum n (config min_n): below it the trigger reports "
                    "insufficient_data and cannot fire (metric: what it judges, whose n it counts).",
                    lbl + ["metric"]).add_metric(lv + [canonical(r.metric)], float(r.min_n))
            if s is None:
                continue
            if s.judged is not None and definition(r, s) == CURRENT:  # no reading of another definition
                f.gauge("driftline_trigger_value", "The value the trigger last judged (estimate, or interval bound "
                        "in confident mode); absent while the stored state was judged under another definition of "
                        "the trigger (until the next evaluation).", lbl).add_metric(lv, s.judged)
            fam = f.gauge("driftline_trigger_state", "1 for the trigger's current state, 0 for the others.",
                          lbl + ["state"])
            for st in STATES:
                fam.add_metric(lv + [st], 1.0 if s.state == st else 0.0)
            f.gauge("driftline_trigger_firing", "1 while the trigger is firing.", lbl).add_metric(
                lv, 1.0 if s.state == FIRING else 0.0)

    def _overflow(self, f: _Families, counters: dict[tuple[str, str], int]) -> None:
        """Events whose variant or version was folded into `__other__` per model, and events of refused new
        models (model `__other__`, kind `model`: the model_limit dead letters), once there are any."""
        rows = [(model, kind, n) for kind in (VARIANT, VERSION) for (name, model), n in counters.items()
                if name == overflow_counter(kind)]
        refused = counters.get(("dead_letters", "model_limit"), 0)
        if refused:
            rows.append((OVERFLOW, MODEL, refused))
        if not rows:
            return
        fam = f.counter("driftline_label_overflow", "Events beyond limits: a new variant or model_version folded "
                        "into __other__, or a new model refused (model_limit).", ["model", "kind"])
        for model, kind, n in sorted(rows):
            fam.add_metric([model, kind], float(n))

    @staticmethod
    def _labels(f: _Families, counters: dict[tuple[str, str], int]) -> None:
        """How labels arrived: corrections, stale outcomes, implicit negatives and those overturned later."""
        for name, key, doc in LABEL_COUNTERS:
            f.counter(name, doc, []).add_metric([], float(counters.get((key, ""), 0)))
        fam = f.counter("driftline_implicit_negatives_relabelled", "Implicit negatives whose explicit outcome arrived "
                        "after maturity, by that outcome (label=positive: the maturity assumption was wrong for that "
                        "prediction; counts moved from negative to positive).", ["label"])
        for label in ("negative", "positive"):
            fam.add_metric([label], float(counters.get((IMPLICIT_RELABELLED, label), 0)))

    def _pipeline(self, f: _Families) -> None:
        counters = self.store.counters()
        events = f.counter("driftline_events", "Events accepted (decoded and valid), all sources together.",
                           ["source", "type"])
        dups = f.counter("driftline_duplicates", "Events whose id was already seen (the first copy counts).",
                         ["type"])
        for kind in EVENT_TYPES:
            events.add_metric([EVENTS_SOURCE, kind], float(counters.get(("events", kind), 0)))
            dups.add_metric([kind], float(counters.get(("duplicates", kind), 0)))
        f.counter("driftline_conflicting_duplicates", "Duplicate predictions (also in driftline_duplicates_total) "
                  "with another score, ts or model_version than the copy stored first (or a threshold of its own "
                  "that flags it otherwise), which counts.",
                  ["type"]).add_metric(["prediction"], float(counters.get(CONFLICTING, 0)))
        f.counter("driftline_shared_id_models", "Predictions whose id another model scored too: an outcome names no "
                  "model, so it labels both models' predictions (give each model ids of its own).",
                  []).add_metric([], float(sum(v for (name, _), v in counters.items() if name == SHARED_MODELS)))
        dead = {reason: 0 for reason in DEAD_LETTER_REASONS}
        dead.update({lbl: v for (name, lbl), v in counters.items() if name == "dead_letters"})
        fam = f.counter("driftline_dead_letters", "Messages rejected, by machine-readable reason (every known "
                        "reason from the start, at 0 until one occurs).", ["reason"])
        for reason, v in sorted(dead.items()):
            fam.add_metric([reason], float(v))
        self._overflow(f, counters)
        f.counter("driftline_expired_predictions", "Predictions dropped from the join state after the label "
                  "horizon.", []).add_metric([], float(counters.get(("expired_predictions", ""), 0)))
        self._labels(f, counters)
        for kind in EVENT_TYPES:
            ts = self.store.newest_event(kind)
            if ts is not None:
                f.gauge("driftline_last_event_timestamp_seconds", "Event time (the events' own ts) of the newest "
                        "event stored, by type; a producer's skewed clock moves it, so freshness is "
                        "driftline_last_stored_timestamp_seconds.", ["type"]).add_metric([kind], float(ts))
            stored = self.store.last_stored(kind)
            if stored is not None:
                f.gauge("driftline_last_stored_timestamp_seconds", "Wall-clock time events of this type were last "
                        "stored (by the writing replica's clock): the freshness of the feed.",
                        ["type"]).add_metric([kind], float(stored))
        f.gauge("driftline_pending_outcomes", "Outcomes waiting for their prediction to arrive.", []).add_metric(
            [], float(self.store.pending_outcomes()))
        f.gauge("driftline_join_predictions", "Predictions held in the join state until labelled or past the "
                "label horizon (join-store size).", []).add_metric([], float(self.store.join_size()))
