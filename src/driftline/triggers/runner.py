"""One evaluation pass: read every trigger's metric from the store, run the pure evaluator, persist the result.

Windows end at `at` (default `now`) aligned down to a bucket boundary; `now` drives for-durations, cooldowns and event silence. Both are given by
the caller (service clock, or `--at` for a historical replay), never read here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..analysis.classification import Metrics
from ..config import AB, Config, ConfigError, Trigger
from ..core.stats import BucketStats
from ..storage.bucket_row import BucketRow
from ..storage.store import Store
from ..readouts.drift import multivariate_reading
from ..readouts.headline import headline_total, headline_variant
from ..readouts.matured_part import maturing
from ..readouts.ranking import window_metrics
from ..readouts.windows import Window, iso, merged, window_ending, window_rows
from . import history
from .drift_hook import DriftProvider, DriftReading, observation as drift_observation
from .metrics import DRIFT, MULTIVARIATE, canonical, dead_letter_rate, from_metrics, info, silence
from .model import Evaluation, Notice, Observation, Rule, Transition, TriggerState, evaluate


def group_stats(rows: Sequence[BucketRow], ab: AB | None = None
                ) -> tuple[BucketStats, dict[tuple[str, str], BucketStats]]:
    """Whole-model total (readouts.headline: in shadow mode, `ab`'s production arm only) and per-(variant,
    model_version) statistics, merged in the same order as `metrics_document`, so every number equals
    `driftline metrics --json` to the last bit."""
    groups: dict[tuple[str, str], list[BucketRow]] = {}
    for r in rows:
        groups.setdefault((r.variant, r.model_version), []).append(r)
    by = {key: merged(rs) for key, rs in sorted(groups.items())}
    return headline_total(AB() if ab is None else ab, by), by


def compile_rules(triggers: Sequence[Trigger]) -> list[Rule]:
    """Rules of the configured triggers; ConfigError naming the trigger when its metric is unknown."""
    rules = []
    for i, t in enumerate(triggers):
        try:
            info(t.metric)
        except ValueError as err:
            raise ConfigError(f"field `triggers[{i}].metric` ({t.name}): {err}") from None
        rules.append(Rule.from_trigger(t))
    return rules


@dataclass(frozen=True, slots=True)
class EvaluationRun:
    """Everything one pass produced, trigger by trigger (same order as the config)."""

    model: str
    now: float
    at: float
    rules: tuple[Rule, ...]
    evaluations: tuple[Evaluation, ...]
    states_later: float | None = None
    """When the stored states were evaluated after `now` (a look back with --at): when that was. The run then
    started from no prior state and stored nothing, so the live states are untouched."""

    @property
    def states(self) -> list[TriggerState]:
        return [e.state for e in self.evaluations]

    @property
    def transitions(self) -> list[Transition]:
        return [e.transition for e in self.evaluations if e.transition is not None]

    @property
    def notices(self) -> list[Notice]:
        return [e.notice for e in self.evaluations if e.notice is not None]

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "now": iso(self.now), "at": iso(self.at),
                "stored_states_later": None if self.states_later is None else iso(self.states_later), "triggers": [
            {**r.to_json(), "state": e.state.to_json(),
             "transition": e.transition.to_json() if e.transition else None,
             "notice": e.notice.kind if e.notice else None}
            for r, e in zip(self.rules, self.evaluations)]}


@dataclass
class Reader:
    """Reads trigger metrics at one instant, caching a window's statistics across triggers that share it."""

    store: Store
    config: Config
    model: str
    at: float
    now: float
    drift: DriftProvider | None = None
    _metrics: dict[tuple[float, str | None], Metrics] = field(default_factory=dict)
    _drift: dict[tuple[float, str | None], Sequence[DriftReading]] = field(default_factory=dict)
    _counters: dict[tuple[str, str], int] | None = None

    def window(self, window_s: float) -> Window:
        return window_ending(self.at, window_s, self.config.bucket_s)

    def metrics(self, window_s: float, variant: str | None) -> Metrics:
        """Classifier metrics of the window (as `driftline metrics --at`), cached."""
        key = (window_s, variant)
        if key not in self._metrics:
            window = self.window(window_s)
            rows = window_rows(self.store, self.model, window, variant, features=False)
            self._metrics[key] = window_metrics(self.store, self.model, window, rows, group_stats(rows)[0], variant,
                                                maturing=maturing(self.store, self.config))
        return self._metrics[key]

    def counters(self) -> dict[tuple[str, str], int]:
        if self._counters is None:
            self._counters = self.store.counters()
        return self._counters

    def last_stored(self) -> float | None:
        """When events were last stored (wall clock), else the newest event time (a database written before that
        was recorded): silence follows arrivals, so one event stamped a day ahead cannot hide a stopped feed."""
        stored = self.store.last_stored()
        return self.store.newest_event() if stored is None else stored

    def drift_readings(self, window_s: float, variant: str | None) -> Sequence[DriftReading]:
        key = (window_s, variant)
        if key not in self._drift:
            self._drift[key] = [] if self.drift is None else list(
                self.drift(self.store, self.config, self.model, self.window(window_s), variant))
        return self._drift[key]

    def multivariate(self, window_s: float, variant: str | None, metric: str) -> Observation:
        """The multivariate drift ratio or call of the window (no reading without the drift provider)."""
        if self.drift is None:
            return Observation(None, n=0)
        r = multivariate_reading(self.store, self.config, self.model, self.window(window_s), variant)
        if r is None:
            return Observation(None, n=0)
        return Observation(r.ratio if metric == "multivariate_drift" else float(r.drifted), n=r.n)

    def observe(self, rule: Rule) -> Observation:
        """The reading a rule judges; a rule naming no variant reads the whole model (shadow mode: the
        production arm, readouts.headline)."""
        name = canonical(rule.metric)
        variant = headline_variant(self.config.ab, rule.variant)
        if name == "dead_letter_rate":
            return dead_letter_rate(self.counters())
        if name == "silence_seconds":
            events = sum(v for (n, _), v in self.counters().items() if n == "events")
            return silence(self.last_stored(), self.now, events)
        if name in DRIFT:
            return drift_observation(self.drift_readings(rule.window_s, variant), name, rule.feature)
        if name in MULTIVARIATE:
            return self.multivariate(rule.window_s, variant, name)
        return from_metrics(name, self.metrics(rule.window_s, variant))


def run(store: Store, config: Config, now: float, at: float | None = None, drift: DriftProvider | None = None,
        persist: bool = True, rules: Sequence[Rule] | None = None, model: str | None = None) -> EvaluationRun:
    """Evaluate every configured trigger once on `model` (default: the config's); with persist, store the states
    and the transitions (unless the stored states are newer than `now`: see EvaluationRun.states_later)."""
    rules = list(rules) if rules is not None else compile_rules(config.triggers)
    at = now if at is None else at
    model = config.model if model is None else model
    prev = history.load_states(store, model)
    latest = max((s.updated_at for s in prev.values()), default=None)
    later = latest if latest is not None and latest > now else None
    if later is not None:  # time does not run backwards for the stored state machine: a look back starts afresh
        prev = {}
    reader = Reader(store, config, model, at, now, drift)
    evaluations = tuple(evaluate(r, prev.get(r.name), reader.observe(r), now) for r in rules)
    out = EvaluationRun(model, now, at, tuple(rules), evaluations, later)
    if persist and later is None:
        history.save(store, model, rules, out.states, out.transitions)
        history.prune_states(store, model, [r.name for r in rules])
    return out
