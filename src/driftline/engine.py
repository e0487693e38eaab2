"""The pure engine: joins predictions and outcomes by id and turns events into bucket deltas.

Given a batch of decoded events and the join state those ids need (loaded by the store), it returns
bucket deltas and join-state changes. No IO and no clock reads: time comes from the events, and the
caller passes the watermark used for implicit negatives and expiry.

Order independence: the label of a prediction is the outcome with the greatest (ts, label); an older
outcome arriving later is stale and changes nothing, so any arrival order gives the same final state.
Duplicated prediction ids (per model and variant): the first one counts, later copies are counted.
Label delay is measured to the outcome currently in force, so it too is independent of arrival order.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .events import Decoded, Outcome, Prediction
from .grids import delay_bin, feature_bin, score_bin
from .stats import LOG_EPS, NEG, POS, SUM_NLL_NEG, SUM_NLL_POS, SUM_P2, UNL, BucketStats, FeatureHist

DEFAULT_VARIANT = "default"
DEFAULT_VERSION = "unknown"
MAX_CATEGORIES_PER_BUCKET = 1000
MAX_CATEGORY_LEN = 200
OTHER = "__other__"

BucketKey = tuple[str, str, str, int, int]
"""(model, model_version, variant, bucket start in epoch seconds, shard)."""
PredKey = tuple[str, str, str]
"""(prediction_id, model, variant): shadow mode scores one id under several variants."""


@dataclass(slots=True)
class EngineSettings:
    """What the engine needs from the config."""

    threshold: float = 0.5
    bucket_s: int = 3600
    max_features: int = 50
    declared_features: tuple[str, ...] = ()
    slice_features: tuple[str, ...] = ()


@dataclass(slots=True)
class PredRecord:
    """Join state of one prediction: enough to move its counts when its label arrives or changes."""

    prediction_id: str
    model: str
    model_version: str
    variant: str
    ts: float
    score: float
    flagged: bool
    shard: int = 0
    label: int | None = None
    label_ts: float | None = None
    implicit: bool = False
    slice_values: dict[str, str] | None = None

    @property
    def key(self) -> PredKey:
        return (self.prediction_id, self.model, self.variant)

    def bucket_key(self, bucket_s: int) -> BucketKey:
        start = int(self.ts // bucket_s) * bucket_s
        return (self.model, self.model_version, self.variant, start, self.shard)

    @property
    def state(self) -> int:
        return UNL if self.label is None else self.label


@dataclass(slots=True)
class OutcomeRecord:
    """The authoritative outcome of a prediction id; `matched` once a prediction has joined it."""

    prediction_id: str
    label: int
    ts: float
    shard: int = 0
    matched: bool = False


@dataclass(slots=True)
class JoinView:
    """The join state for the ids of a batch, loaded by the store; the engine updates it in place."""

    preds: dict[str, list[PredRecord]] = field(default_factory=dict)
    outcomes: dict[str, OutcomeRecord] = field(default_factory=dict)


class _Acc:
    """Per-bucket accumulator of moves, applied to a BucketStats in one vectorised step."""

    __slots__ = ("states", "flags", "scores", "signs", "delays", "delay_signs", "num", "cat", "missing", "expired",
                 "implicit", "slice_moves", "tracked")

    def __init__(self) -> None:
        self.states: list[int] = []
        self.flags: list[int] = []
        self.scores: list[float] = []
        self.signs: list[int] = []
        self.delays: list[float] = []
        self.delay_signs: list[int] = []
        self.num: dict[str, list[float]] = {}
        self.cat: dict[str, Counter[str]] = {}
        self.missing: Counter[str] = Counter()
        self.expired = 0
        self.implicit = 0
        self.slice_moves: list[tuple[str, str, int, int, int]] = []
        self.tracked: set[str] = set()

    def move(self, state: int, flagged: bool, score: float, sign: int,
             slice_values: dict[str, str] | None = None) -> None:
        if slice_values:
            for name, value in slice_values.items():
                self.slice_moves.append((name, value, state, int(flagged), sign))
        self.states.append(state)
        self.flags.append(int(flagged))
        self.scores.append(score)
        self.signs.append(sign)

    def delay(self, seconds: float, sign: int = 1) -> None:
        self.delays.append(seconds)
        self.delay_signs.append(sign)

    def to_stats(self) -> BucketStats:
        b = BucketStats()
        if self.states:
            st = np.asarray(self.states, dtype=np.int64)
            fl = np.asarray(self.flags, dtype=np.int64)
            sc = np.asarray(self.scores, dtype=np.float64)
            sg = np.asarray(self.signs, dtype=np.int64)
            sb = score_bin(sc)
            np.add.at(b.conf, (st, fl), sg)
            np.add.at(b.hist, (st, sb), sg)
            np.add.at(b.psum, (st, sb), sg * sc)
            p = np.clip(sc, LOG_EPS, 1.0 - LOG_EPS)
            np.add.at(b.sums[:, SUM_P2], st, sg * sc * sc)
            np.add.at(b.sums[:, SUM_NLL_POS], st, sg * -np.log(p))
            np.add.at(b.sums[:, SUM_NLL_NEG], st, sg * -np.log1p(-p))
        if self.delays:
            np.add.at(b.delay, delay_bin(np.asarray(self.delays, dtype=np.float64)),
                      np.asarray(self.delay_signs, dtype=np.int64))
        names = set(self.num) | set(self.cat) | set(self.missing)
        for name in names:
            fh = FeatureHist(missing=self.missing.get(name, 0))
            vals = self.num.get(name)
            if vals:
                idx, cnt = np.unique(feature_bin(np.asarray(vals, dtype=np.float64)), return_counts=True)
                fh.num = dict(zip(idx.tolist(), cnt.tolist()))
            cats = self.cat.get(name)
            if cats:
                fh.cat = _bound_categories(cats)
            b.features[name] = fh
        b.expired = self.expired
        b.implicit = self.implicit
        for name, value, state, flagged, sign in self.slice_moves:
            per = b.slices.setdefault(name, {})
            conf = per.get(value)
            if conf is None:
                conf = per[value] = np.zeros((3, 2), dtype=np.int64)
            conf[state, flagged] += sign
        for name in list(b.slices):
            b.slices[name] = {v: c for v, c in b.slices[name].items() if c.any()}
            if not b.slices[name]:
                del b.slices[name]
        return b


def _bound_categories(cats: Counter[str]) -> dict[str, int]:
    if len(cats) <= MAX_CATEGORIES_PER_BUCKET:
        return dict(cats)
    top = cats.most_common(MAX_CATEGORIES_PER_BUCKET - 1)
    kept = dict(top)
    kept[OTHER] = kept.get(OTHER, 0) + sum(cats.values()) - sum(kept.values())
    return kept


@dataclass(slots=True)
class EngineResult:
    """Bucket deltas, changed join records and counters produced by one batch."""

    deltas: dict[BucketKey, BucketStats] = field(default_factory=dict)
    upserts: dict[PredKey, PredRecord] = field(default_factory=dict)
    deletes: set[PredKey] = field(default_factory=set)
    outcomes: dict[str, OutcomeRecord] = field(default_factory=dict)
    outcome_deletes: set[str] = field(default_factory=set)
    counters: Counter[tuple[str, str]] = field(default_factory=Counter)
    max_ts: dict[str, float] = field(default_factory=dict)


class Engine:
    """Applies events to a JoinView and accumulates bucket deltas; one instance per batch."""

    def __init__(self, settings: EngineSettings, view: JoinView) -> None:
        self.s = settings
        self.view = view
        self.result = EngineResult()
        self._acc: dict[BucketKey, _Acc] = {}
        self._declared = settings.declared_features

    def _bucket(self, rec: PredRecord) -> _Acc:
        key = rec.bucket_key(self.s.bucket_s)
        acc = self._acc.get(key)
        if acc is None:
            acc = self._acc[key] = _Acc()
        return acc

    def _seen(self, kind: str, ts: float) -> None:
        r = self.result
        r.counters[("events", kind)] += 1
        if ts > r.max_ts.get(kind, float("-inf")):
            r.max_ts[kind] = ts

    # --- events ---------------------------------------------------------------------------------
    def apply(self, decoded: Decoded, shard: int = 0) -> None:
        """Apply one decoded event."""
        ev = decoded.event
        if isinstance(ev, Prediction):
            self._prediction(ev, decoded.ts, shard)
        else:
            self._outcome(ev, decoded.ts, shard)

    def _prediction(self, ev: Prediction, ts: float, shard: int) -> None:
        self._seen("prediction", ts)
        variant = ev.variant or DEFAULT_VARIANT
        recs = self.view.preds.setdefault(ev.prediction_id, [])
        for r in recs:
            if r.model == ev.model and r.variant == variant:
                self.result.counters[("duplicates", "prediction")] += 1
                return
        threshold = self.s.threshold if ev.threshold is None else ev.threshold
        rec = PredRecord(ev.prediction_id, ev.model, ev.model_version or DEFAULT_VERSION, variant, ts,
                         float(ev.score), ev.score >= threshold, shard,
                         slice_values=self._slice_values(ev.features))
        acc = self._bucket(rec)
        out = self.view.outcomes.get(ev.prediction_id)
        if out is not None:
            rec.label, rec.label_ts = out.label, out.ts
            acc.delay(out.ts - ts)
            if not out.matched:
                out.matched = True
                self.result.outcomes[out.prediction_id] = out
                self.result.counters[("joined", "outcome_first")] += 1
        recs.append(rec)
        self.result.upserts[rec.key] = rec
        acc.move(rec.state, rec.flagged, rec.score, 1, rec.slice_values)
        self._features(acc, ev.features)

    def _slice_values(self, features: dict[str, object] | None) -> dict[str, str] | None:
        """The prediction's value of each configured slice feature ('missing' when absent or null)."""
        if not self.s.slice_features:
            return None
        feats = features or {}
        out = {}
        for name in self.s.slice_features:
            v = feats.get(name)
            out[name] = "missing" if v is None else ("true" if v is True else "false" if v is False
                                                     else str(v)[:MAX_CATEGORY_LEN])
        return out

    def _features(self, acc: _Acc, features: dict[str, object] | None) -> None:
        feats = features or {}
        if self._declared:
            for name in self._declared:
                if name not in feats:
                    acc.missing[name] += 1
        num, cat = acc.num, acc.cat
        for name, value in feats.items():
            if name not in acc.tracked and not self._track(acc, name):
                continue
            if value is None:
                acc.missing[name] += 1
            elif value is True or value is False:
                c = cat.get(name)
                if c is None:
                    c = cat[name] = Counter()
                c["true" if value else "false"] += 1
            elif isinstance(value, (int, float)):
                vals = num.get(name)
                if vals is None:
                    vals = num[name] = []
                vals.append(value)
            else:
                c = cat.get(name)
                if c is None:
                    c = cat[name] = Counter()
                c[value[:MAX_CATEGORY_LEN]] += 1  # type: ignore[index]

    def _track(self, acc: _Acc, name: str) -> bool:
        """Start tracking a feature in this bucket unless undeclared or over the bound (counted)."""
        if self._declared and name not in self._declared:
            self.result.counters[("features_untracked", "undeclared")] += 1
            return False
        if len(acc.tracked) >= self.s.max_features:
            self.result.counters[("features_untracked", "over_limit")] += 1
            return False
        acc.tracked.add(name)
        return True

    def _outcome(self, ev: Outcome, ts: float, shard: int) -> None:
        self._seen("outcome", ts)
        label = int(ev.label)
        pid = ev.prediction_id
        prev = self.view.outcomes.get(pid)
        if prev is not None:
            if (prev.ts, prev.label) == (ts, label):
                self.result.counters[("duplicates", "outcome")] += 1
                return
            if (ts, label) < (prev.ts, prev.label):
                self.result.counters[("stale_outcomes", "")] += 1
                return
            if prev.label != label:
                self.result.counters[("corrections", "")] += 1
        recs = self.view.preds.get(pid) or []
        out = OutcomeRecord(pid, label, ts, prev.shard if prev else shard, matched=bool(recs))
        self.view.outcomes[pid] = out
        self.result.outcomes[pid] = out
        self.result.outcome_deletes.discard(pid)
        for rec in recs:
            self._relabel(rec, label, ts)

    def _relabel(self, rec: PredRecord, label: int, ts: float) -> None:
        acc = self._bucket(rec)
        if rec.label is not None and not rec.implicit and rec.label_ts is not None:
            acc.delay(rec.label_ts - rec.ts, -1)
        acc.delay(ts - rec.ts)
        if rec.implicit:
            acc.implicit -= 1
            rec.implicit = False
        if rec.state != label:
            acc.move(rec.state, rec.flagged, rec.score, -1, rec.slice_values)
            acc.move(label, rec.flagged, rec.score, 1, rec.slice_values)
        rec.label, rec.label_ts = label, ts
        self.result.upserts[rec.key] = rec

    # --- maintenance ----------------------------------------------------------------------------
    def mature(self, records: list[PredRecord]) -> None:
        """Implicit-negative policy: these unlabelled, mature predictions become negatives."""
        for rec in records:
            if rec.label is not None:
                continue
            acc = self._bucket(rec)
            acc.move(UNL, rec.flagged, rec.score, -1, rec.slice_values)
            acc.move(NEG, rec.flagged, rec.score, 1, rec.slice_values)
            acc.implicit += 1
            rec.label, rec.implicit = NEG, True
            self.result.upserts[rec.key] = rec
            self.result.counters[("implicit_negatives", "")] += 1

    def expire(self, records: list[PredRecord], outcomes: list[OutcomeRecord]) -> None:
        """Drop join state past the label horizon; never-labelled predictions are counted as expired."""
        for rec in records:
            if rec.label is None:
                self._bucket(rec).expired += 1
                self.result.counters[("expired_predictions", "")] += 1
            self.result.deletes.add(rec.key)
            self.result.upserts.pop(rec.key, None)
        for out in outcomes:
            if not out.matched:
                self.result.counters[("expired_outcomes", "")] += 1
            self.result.outcome_deletes.add(out.prediction_id)
            self.result.outcomes.pop(out.prediction_id, None)

    def finish(self) -> EngineResult:
        """Materialise the accumulated moves as bucket deltas."""
        for key, acc in self._acc.items():
            delta = acc.to_stats()
            if not delta.is_empty():
                self.result.deltas[key] = delta
        self._acc.clear()
        return self.result


