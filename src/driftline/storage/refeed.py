"""Which `model_limit` dead letters of models admitted since are still to be fed again (`driftline models list`):
an event refused before its model got a slot is stored only once fed again (`dead-letters --raw | replay -`), and
the dead letter stays whether or not it was, so whether one still waits is read from the join state: its
prediction is not stored, and it is recent enough to be stored if fed again (not past the label horizon)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import func, select, tuple_

from . import schema as t
from .bulk import chunks
from .inventory import refused_model
from .store import Store
from ..core.engine import DEFAULT_VARIANT
from ..core.events import RAW_LIMIT, Decoded, Prediction, decode
from ..core.limits import Limits

MAX_CHECKED = 100_000
"""`model_limit` dead letters read per call, newest first: a junk-name flood can leave millions, and `models list`
must stay quick and bounded in memory; older ones are counted as unchecked, never claimed fed."""


@dataclass(slots=True)
class Refed:
    """One admitted model's refused events (its `model_limit` dead letters), by what feeding them again would do."""

    refused: int = 0
    stored: int = 0
    """Their prediction is stored now (fed again, or sent again by the producer)."""
    too_old: int = 0
    """Not stored, and older than the label horizon behind the newest event: fed again, refused past_horizon."""
    unfeedable: int = 0
    """Stored cut at the payload limit, or no longer a valid prediction: `--raw` leaves it out or it is refused."""
    unchecked: int = 0
    """Older `model_limit` dead letters (of any model) past the MAX_CHECKED newest that were read: unknown."""

    @property
    def waiting(self) -> int:
        """Not stored and would be if fed again: what the `dead-letters … --raw | driftline replay -` hint is for."""
        return self.refused - self.stored - self.too_old - self.unfeedable


def refeed_state(store: Store, models: Collection[str], horizon_s: float, limits: Limits,
                 max_checked: int | None = None) -> dict[str, Refed]:
    """Per model of `models`, its `model_limit` dead letters by whether they still wait to be fed again: the newest
    `max_checked` of them are read (the others counted in `unchecked`, so no model is said to have none left while
    some were not read). Read in one transaction."""
    out = {m: Refed() for m in models}
    keys: dict[tuple[str, str, str], list[float]] = {}
    d, p = t.dead_letters.c, t.predictions.c
    with store.read() as conn:
        newest = store.newest_event_in(conn)
        max_checked = MAX_CHECKED if max_checked is None else max_checked
        total = conn.execute(select(func.count()).where(d.reason == "model_limit")).scalar_one()
        if total > max_checked:
            for r in out.values():
                r.unchecked = total - max_checked
        q = select(d.raw, d.detail).where(d.reason == "model_limit").order_by(d.id.desc()).limit(max_checked)
        for row in conn.execution_options(yield_per=1000).execute(q):
            raw = bytes(row.raw)
            model = refused_model(raw, row.detail)  # as `models list` names the refused models
            if model not in out:
                continue
            out[model].refused += 1
            got = decode(raw, "dead_letters", 0, 0, limits=limits) if len(raw) < RAW_LIMIT else None
            if not isinstance(got, Decoded) or not isinstance(got.event, Prediction) or got.event.model != model:
                out[model].unfeedable += 1
                continue
            keys.setdefault((got.event.prediction_id, model, got.event.variant or DEFAULT_VARIANT), []).append(got.ts)
        stored: set[tuple[str, str, str]] = set()
        for chunk in chunks(sorted(keys)):
            q = select(p.prediction_id, p.model, p.variant).where(tuple_(p.prediction_id, p.model, p.variant)
                                                                  .in_(list(chunk)))
            stored.update(tuple(r) for r in conn.execute(q))
    cutoff = None if newest is None else newest - horizon_s
    for key, times in keys.items():
        for ts in times:
            if key in stored:
                out[key[1]].stored += 1
            elif cutoff is not None and ts < cutoff:
                out[key[1]].too_old += 1
    return out
