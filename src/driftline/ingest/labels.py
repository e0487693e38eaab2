"""The label gate inside a batch's transaction: loads the admitted values, folds or refuses predictions whose
model, variant or version is beyond `limits:` (driftline.core.labels), stores new admissions, counts the
overflow and logs it (once per model and kind, then at most once a minute per process)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress
from typing import Any, Protocol

import msgspec
from sqlalchemy import Connection

from ..config_limits import Limits
from ..core.engine import DEFAULT_VARIANT, DEFAULT_VERSION
from ..core.batch import pred_flags
from ..core.events import RAW_LIMIT, Decoded, DeadLetter
from ..core.labels import MODEL, OVERFLOW, VARIANT, Admitted, LabelGate, LabelLimits, Refused, overflow_counter
from ..numbers import counted
from ..storage.store import Store

log = logging.getLogger(__name__)

LOG_EVERY_S = 60.0
"""After the first line per (model, kind), overflow is logged at most this often per process."""


def label_limits(limits: Limits, reserved: Mapping[str, Iterable[str]] | None = None,
                 kept_models: Iterable[str] = ()) -> LabelLimits:
    """The pure gate's limits from the config section; `reserved`: model → variants kept a slot (ab.arms);
    `kept_models`: models kept a slot (the config's named `model:`)."""
    return LabelLimits(limits.max_models, limits.max_variants_per_model, limits.max_versions_per_model,
                       None if limits.models is None else frozenset(limits.models),
                       {m: frozenset(v) for m, v in limits.variants.items()},
                       {m: frozenset(v) for m, v in limits.versions.items()},
                       {m: frozenset(v) for m, v in (reserved or {}).items() if v}, frozenset(kept_models))


class Positioned(Protocol):
    """Where a record came from and its bytes (a pipeline RawRecord), for the dead letter of a refused one."""

    source: str
    partition: int
    offset: int
    payload: bytes


class LabelPolicy:
    """Applies `limits:` to each batch; keeps only the per-process log throttle (bounded by models × kinds)."""

    def __init__(self, limits: Limits, clock: Callable[[], float],
                 reserved: Mapping[str, Iterable[str]] | None = None, kept_models: Iterable[str] = ()) -> None:
        self.config = limits
        self.limits = label_limits(limits, reserved, kept_models)
        self.clock = clock
        self._logged: dict[tuple[str, str], tuple[float, int]] = {}

    def gate(self, store: Store, conn: Connection, ok: Sequence[tuple[Decoded, int]], raws: Sequence[Positioned],
             dead: list[DeadLetter], evs: list[Any] | None = None, is_pred: list[bool] | None = None,
             admitted: Admitted | None = None) -> tuple[list[tuple[Decoded, int]], list[Positioned], LabelGate]:
        """The batch's events with folded labels and their records; refused predictions are appended to `dead`.

        The distinct label triples are decided first, in order of first occurrence, on a copy of the admitted
        values: when all are kept as they are (the common case), that is all the event-by-event gate would have
        done, and the batch is returned as it came (the same lists when given lists: the caller can tell nothing
        changed); otherwise `_each` runs the gate event by event. `evs`, `is_pred`: the events of `ok` and whether
        each is a prediction, when listed already (core.batch.event_columns: the engine reads the same flags);
        `admitted`: the admitted values when read already in this transaction (Store.batch_start_in)."""
        if admitted is None:
            admitted = store.admitted_labels(conn)
        if evs is None:
            evs = [d.event for d, _ in ok]
        if is_pred is None:
            is_pred = pred_flags(evs)
        probe = LabelGate(self.limits, Admitted(set(admitted.models), {k: set(v) for k, v in admitted.values.items()}))
        seen: set[tuple[str, str, str]] = set()
        for model, variant, version in dict.fromkeys([(e.model, e.variant, e.model_version)
                                                      for e in compress(evs, is_pred)]):
            variant, version = variant or DEFAULT_VARIANT, version or DEFAULT_VERSION
            if (model, variant, version) not in seen:
                seen.add((model, variant, version))
                if probe.decide(model, variant, version) != (variant, version):
                    gate = LabelGate(self.limits, admitted)
                    return (*_each(gate, ok, raws, evs, is_pred, dead), gate)
        return (ok if type(ok) is list else list(ok)), (raws if type(raws) is list else list(raws)), probe

    def record(self, store: Store, conn: Connection, gate: LabelGate, counters: Counter[tuple[str, str]]) -> None:
        """Store the batch's admissions, add its overflow to the counters and log it."""
        store.admit_labels(conn, gate.new)
        for (model, kind), n in gate.overflow.items():
            if kind != MODEL:  # refused models are counted as dead letters (model_limit)
                counters[(overflow_counter(kind), model)] += n
        self._log(gate)

    def _log(self, gate: LabelGate) -> None:
        now = float(self.clock())
        for key, n in sorted(gate.overflow.items()):
            last, pending = self._logged.get(key, (None, 0))
            if last is not None and now - last < LOG_EVERY_S:
                self._logged[key] = (last, pending + n)
                continue
            self._logged[key] = (now, 0)
            model, kind = key
            examples = ", ".join(repr(v) for v in gate.examples.get(key, []))
            if kind == MODEL:
                limit = "limits.models" if self.config.models is not None else \
                    f"limits.max_models={self.config.max_models}"
                log.warning("label limit: %s of new models dead-lettered since the last such line (model_limit, "
                            "%s reached), e.g. %s",
                            counted(n + pending, "event"), limit, examples)
            else:
                field = "max_variants_per_model" if kind == VARIANT else "max_versions_per_model"
                limit = getattr(self.config, field)
                listed = model in (self.config.variants if kind == VARIANT else self.config.versions)
                why = f"limits.{'variants' if kind == VARIANT else 'versions'}.{model} allow-list" if listed \
                    else f"limits.{field}={limit}"
                log.warning("label limit: model %r: %s with a new %s folded into %s since the last such line "
                            "(%s reached; totals: driftline_label_overflow_total), e.g. %s",
                            model, counted(n + pending, "event"), kind, OVERFLOW, why, examples)



def _each(gate: LabelGate, ok: Sequence[tuple[Decoded, int]], raws: Sequence[Positioned], evs: list[Any],
          is_pred: list[bool], dead: list[DeadLetter]) -> tuple[list[tuple[Decoded, int]], list[Positioned]]:
    """The gate event by event: each prediction's labels decided (a triple once kept as it is needs no second
    decision), refused ones appended to `dead`, folded ones replaced."""
    kept: list[tuple[Decoded, int]] = []
    kept_raws: list[Positioned] = []
    kept_as_is: set[tuple[str, str, str]] = set()
    """Labels already decided as themselves in this batch: admitted then, so deciding again changes nothing."""
    for (d, shard), raw, ev, p in zip(ok, raws, evs, is_pred):
        if not p:
            kept.append((d, shard))
            kept_raws.append(raw)
            continue
        variant, version = ev.variant or DEFAULT_VARIANT, ev.model_version or DEFAULT_VERSION
        if (ev.model, variant, version) in kept_as_is:
            kept.append((d, shard))
            kept_raws.append(raw)
            continue
        verdict = gate.decide(ev.model, variant, version)
        if verdict == (variant, version):
            kept_as_is.add((ev.model, variant, version))
        if type(verdict) is Refused:
            dead.append(DeadLetter(verdict.reason, verdict.detail, raw.source, raw.partition, raw.offset,
                                   bytes(raw.payload[:RAW_LIMIT])))
            continue
        if verdict != (variant, version):
            d = Decoded(msgspec.structs.replace(ev, variant=verdict[0], model_version=verdict[1]), d.ts)
        kept.append((d, shard))
        kept_raws.append(raw)
    return kept, kept_raws
