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

import hashlib
from collections import Counter
from dataclasses import dataclass, field

import msgspec

from .events import Decoded, Outcome, Prediction
from .feature_columns import FeatureColumns
from .limits import MAX_NAME_LEN
from .moves import MAX_CATEGORY_LEN, Moves
from .stats import NEG, POS, UNL, BucketStats

DEFAULT_VARIANT = "default"
DEFAULT_VERSION = "unknown"

IMPLICIT_RELABELLED = "implicit_relabelled"
"""Counter of predictions counted as implicit negatives whose explicit outcome arrived later, by that outcome
(`positive`: the maturity assumption was wrong for it; `negative`: confirmed)."""

CONFLICTING = ("conflicting_duplicates", "prediction")
"""Counter of duplicate predictions (already counted in `duplicates`) whose score, ts or model_version differs from
the copy stored first, or whose threshold flags it otherwise, which stays: unlike exact copies, their effect
depends on which copy arrived first."""
SHARED_IDS = "shared_id_predictions"
"""Counter of predictions whose id another variant of the same model scored too, labelled 'model\tA\tB' (the two
variants sorted): a shadow arm's mark. In a split design the whole-model numbers sum every variant, so such ids
count once per variant (churn tryout: a shadow arm beside a control/challenger split doubled every whole-model
count, 2,020 'positives' for 1,010 customers, and nothing said so)."""
SHARED_MODELS = "shared_id_models"
"""Counter of predictions whose id another *model* scored too, labelled 'A\tB' (the two models sorted): an outcome
is keyed by prediction_id alone and labels every model's prediction with that id, so two models scoring the same
ids (toxicity and spam on one post id) share their labels (toxicity tryout: spam's `metrics` read fn=1 for a
toxicity report, and nothing said so)."""
SHARED_NAME_LEN = (MAX_NAME_LEN - 2) // 3


def shared_id_label(model: str, a: str, b: str) -> str:
    """The SHARED_IDS counter label of a model and two variants (order-free), each name fit in a third
    of MAX_NAME_LEN (shared_name): labels are VARCHAR(MAX_NAME_LEN) and PostgreSQL refuses a longer one (the batch's
    predictions were dead-lettered store_rejected)."""
    lo, hi = sorted((a, b))
    return "\t".join(shared_name(name) for name in (model, lo, hi))


def shared_models_label(a: str, b: str) -> str:
    """The SHARED_MODELS counter label of two models (order-free), each name as shared_name holds it."""
    return "\t".join(shared_name(name) for name in sorted((a, b)))


def shared_name(name: str) -> str:
    """A name as a SHARED_IDS label holds it: whole up to SHARED_NAME_LEN characters, else its start, '~' and a hash
    of the whole name, so long names with the same start keep their own counts (a bare cut merged two models' counts
    and named neither)."""
    if len(name) <= SHARED_NAME_LEN:
        return name
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"{name[:SHARED_NAME_LEN - len(digest) - 1]}~{digest}"


BucketKey = tuple[str, str, str, int, int]
"""(model, model_version, variant, bucket start in epoch seconds, shard)."""
BUCKET_SHARD = 0
"""The shard of every hourly bucket the engine writes. A prediction's join rows keep its partition as their shard
(maintenance expires each partition by its own event time) but its counts go to one row an hour whatever the
partition, so a window reads one row an hour, not one per partition (issue 18; migration 0014_onerow merged the
rows stored per partition before). Compacted days are shard -1 (storage.compaction)."""
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


class PredRecord(msgspec.Struct, gc=False):
    """Join state of one prediction: enough to move its counts when its label arrives or changes. A Struct (built
    in C, one per prediction: a dataclass's Python __init__ cost ~1,700 instructions a record); fields are set in
    place as labels arrive, compared like a dataclass's."""

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
        return (self.model, self.model_version, self.variant, start, BUCKET_SHARD)

    @property
    def state(self) -> int:
        return UNL if self.label is None else self.label


def label_in_force(rec: PredRecord, out: OutcomeRecord | None) -> None:
    """Give a stored prediction the label in force: its outcome's (label, ts, not implicit) when an outcome row is
    held for its id, else its row's own. A stored prediction row is never rewritten for an outcome (issue 18)."""
    if out is not None:
        rec.label, rec.label_ts, rec.implicit = out.label, out.ts, False


class OutcomeRecord(msgspec.Struct, gc=False):
    """The authoritative outcome of a prediction id; `matched` once a prediction has joined it (a Struct, as
    PredRecord)."""

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
    stored: StoredKeys | None = None
    """The keys the database held when the view was loaded (None: not known; writes then upsert every row)."""


@dataclass(frozen=True, slots=True)
class StoredKeys:
    """Join-row keys found in the database by a batch's lookup: the writes insert the others as new rows."""

    preds: frozenset[PredKey]
    outcomes: frozenset[str]


@dataclass(slots=True)
class EngineResult:
    """Bucket deltas, changed join records and counters produced by one batch."""

    deltas: dict[BucketKey, BucketStats] = field(default_factory=dict)
    upserts: dict[PredKey, PredRecord] = field(default_factory=dict)
    """New predictions and matured ones. A stored prediction labelled by an outcome is not here: its row stays as
    written, and readers take the label in force from the outcome row (label_in_force; issue 18)."""
    deletes: set[PredKey] = field(default_factory=set)
    outcomes: dict[str, OutcomeRecord] = field(default_factory=dict)
    outcome_deletes: set[str] = field(default_factory=set)
    counters: Counter[tuple[str, str]] = field(default_factory=Counter)
    max_ts: dict[str, float] = field(default_factory=dict)
    stored: StoredKeys | None = None
    """The loaded view's stored keys (see JoinView.stored)."""
    conflict_example: str | None = None
    """The prediction_id of the batch's first conflicting duplicate (CONFLICTING), for replay's warning."""
    feature_columns: FeatureColumns | None = field(default=None, compare=False, repr=False)
    """The batch path's feature values as columns (Moves.feature_columns), for the sample recording; None when
    the batch did not give them."""


class Engine:
    """Applies events to a JoinView and records moves per bucket; one instance per batch."""

    def __init__(self, settings: EngineSettings, view: JoinView) -> None:
        self.s = settings
        self.view = view
        self.result = EngineResult(stored=view.stored)
        self._index: dict[BucketKey, int] = {}
        self._moves = Moves()
        self._seen = {"prediction": 0, "outcome": 0}

    def _bucket(self, rec: PredRecord) -> int:
        bs = self.s.bucket_s
        key = (rec.model, rec.model_version, rec.variant, int(rec.ts // bs) * bs, BUCKET_SHARD)
        b = self._index.get(key)
        if b is None:
            b = self._index[key] = len(self._index)
        return b

    # --- events ---------------------------------------------------------------------------------
    def apply(self, decoded: Decoded, shard: int = 0) -> None:
        """Apply one decoded event."""
        ev = decoded.event
        if isinstance(ev, Prediction):
            self._prediction(ev, decoded.ts, shard)
        else:
            self._outcome(ev, decoded.ts, shard)

    def _prediction(self, ev: Prediction, ts: float, shard: int) -> None:
        self._seen["prediction"] += 1
        if ts > self.result.max_ts.get("prediction", -1.0):
            self.result.max_ts["prediction"] = ts
        variant = ev.variant or DEFAULT_VARIANT
        pid = ev.prediction_id
        recs = self.view.preds.get(pid)
        score = float(ev.score)
        own = ev.threshold is not None
        threshold = ev.threshold if own else self.s.threshold
        if recs is None:
            recs = self.view.preds[pid] = []
        else:
            for r in recs:
                if r.model == ev.model and r.variant == variant:
                    self.result.counters[("duplicates", "prediction")] += 1
                    if r.score != score or r.ts != ts or r.model_version != (ev.model_version or DEFAULT_VERSION) \
                            or r.flagged != (score >= threshold):  # a threshold that flags the copy otherwise
                        self._conflict(pid)
                    return
            others: set[str] = set()
            for r in recs:  # the id scored by another variant of this model too: a shadow pair
                if r.model == ev.model:
                    self.result.counters[(SHARED_IDS, shared_id_label(ev.model, r.variant, variant))] += 1
                elif r.model not in others:  # by another model: its outcomes label both
                    others.add(r.model)
                    self.result.counters[(SHARED_MODELS, shared_models_label(ev.model, r.model))] += 1
        rec = PredRecord(pid, ev.model, ev.model_version or DEFAULT_VERSION, variant, ts, score,
                         score >= threshold, shard,
                         slice_values=self._slice_values(ev.features) if self.s.slice_features else None)
        b = self._bucket(rec)
        moves = self._moves
        out = self.view.outcomes.get(pid)
        if out is not None:
            rec.label, rec.label_ts = out.label, out.ts
            moves.delay(b, out.ts - ts)
            if not out.matched:
                out.matched = True
                self.result.outcomes[out.prediction_id] = out
                self.result.counters[("joined", "outcome_first")] += 1
        recs.append(rec)
        self.result.upserts[(pid, rec.model, variant)] = rec
        moves.move(b, rec.state, rec.flagged, score, 1, rec.slice_values)
        moves.threshold(b, threshold, own)
        moves.features(b, ev.features)

    def _conflict(self, pid: str) -> None:
        """A copy of a stored prediction with another score, ts or model_version (or flagged otherwise): the first
        stored one stays, the copy is counted apart from exact ones (results depend on which arrived first), with an
        example id."""
        self.result.counters[CONFLICTING] += 1
        if self.result.conflict_example is None:
            self.result.conflict_example = pid

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

    def _outcome(self, ev: Outcome, ts: float, shard: int) -> None:
        self._seen["outcome"] += 1
        if ts > self.result.max_ts.get("outcome", -1.0):
            self.result.max_ts["outcome"] = ts
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
        b = self._bucket(rec)
        moves = self._moves
        if rec.label is not None and not rec.implicit and rec.label_ts is not None:
            moves.delay(b, rec.label_ts - rec.ts, -1)
        moves.delay(b, ts - rec.ts)
        if rec.implicit:  # its outcome came after maturity: positive means the implicit negative was wrong
            moves.implicit[b] -= 1
            rec.implicit = False
            self.result.counters[(IMPLICIT_RELABELLED, "positive" if label == POS else "negative")] += 1
        if rec.state != label:
            moves.move(b, rec.state, rec.flagged, rec.score, -1, rec.slice_values)
            moves.move(b, label, rec.flagged, rec.score, 1, rec.slice_values)
        rec.label, rec.label_ts = label, ts
        # not an upsert: a record new in this batch (or matured by it) is one already and is written as it is now; a
        # stored one keeps its row, the outcome row written with it carries the label in force (issue 18)

    # --- maintenance ----------------------------------------------------------------------------
    def mature(self, records: list[PredRecord]) -> None:
        """Implicit-negative policy: these unlabelled, mature predictions become negatives."""
        for rec in records:
            if rec.label is not None:
                continue
            b = self._bucket(rec)
            self._moves.move(b, UNL, rec.flagged, rec.score, -1, rec.slice_values)
            self._moves.move(b, NEG, rec.flagged, rec.score, 1, rec.slice_values)
            self._moves.implicit[b] += 1
            rec.label, rec.implicit = NEG, True
            self.result.upserts[rec.key] = rec
            self.result.counters[("implicit_negatives", "")] += 1

    def expire(self, records: list[PredRecord], outcomes: list[OutcomeRecord]) -> None:
        """Drop join state past the label horizon; never-labelled predictions are counted as expired."""
        for rec in records:
            if rec.label is None:
                self._moves.expired[self._bucket(rec)] += 1
                self.result.counters[("expired_predictions", "")] += 1
            self.result.deletes.add(rec.key)
            self.result.upserts.pop(rec.key, None)
        for out in outcomes:
            if not out.matched:
                self.result.counters[("expired_outcomes", "")] += 1
            self.result.outcome_deletes.add(out.prediction_id)
            self.result.outcomes.pop(out.prediction_id, None)

    def finish(self) -> EngineResult:
        """Materialise the recorded moves as bucket deltas."""
        r = self.result
        for kind, n in self._seen.items():
            if n:
                r.counters[("events", kind)] += n
        self._seen = {"prediction": 0, "outcome": 0}
        deltas = self._moves.deltas(len(self._index), self.s.declared_features, self.s.max_features, r.counters)
        got = self._moves.feature_columns
        if got is not None:
            seq, buckets, names, cols, events, pids, is_pred = got
            r.feature_columns = FeatureColumns(seq, buckets, names, cols, list(self._index), self.s.bucket_s, events,
                                               pids, is_pred)
        for key, b in self._index.items():
            if not deltas[b].is_empty():
                r.deltas[key] = deltas[b]
        self._index.clear()
        self._moves = Moves()
        return r
