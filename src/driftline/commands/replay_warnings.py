"""What a replay says about the events it could not count as sent: past the horizon, expired during it, copies that
conflict, ids scored by two variants of a split design (the warnings `driftline replay` prints after its summary)."""

from __future__ import annotations

from collections import Counter

from ..config import AB
from ..core.engine import CONFLICTING
from ..core.events import iso
from ..ingest.pipeline import EXPIRED_STORED_NOW, BatchResult
from ..ingest.stored_now import MAX_KEYS
from ..numbers import counted, were


def shared_id_warnings(ab: AB, counters: Counter[tuple[str, str]]) -> list[str]:
    """Per model of this replay with ids scored by two of its variants, in a split design: the whole-model numbers
    count them once per variant (readouts.headline.shared_id_note; counts of this replay)."""
    from ..readouts.headline import shared_id_models, shared_id_note
    notes = (shared_id_note(ab, counters, m) for m in shared_id_models(counters))
    return [n.replace(", all time)", ", this replay)") for n in notes if n]


def shared_model_warning(counters: Counter[tuple[str, str]]) -> str | None:
    """Ids of this replay scored by two models: their outcomes label both (readouts.headline.shared_model_note)."""
    from ..readouts.headline import shared_model_note
    note = shared_model_note(counters)
    return None if note is None else note.replace(", all time)", ", this replay)")


def past_horizon_warning(total: BatchResult, newest_before: float | None, horizon: str) -> str | None:
    """What a replay behind newer stored data could not take (user tryout: history backfilled next to live events
    lost its labels, and a second copy of it counted twice): None unless some of its events were dead-lettered
    past_horizon. When the replay itself stored newer events than those stored before it, its own events are out of
    time order by more than the horizon (a file not sorted by ts, or predictions and outcomes replayed one file after
    the other), and the warning says so: a database of its own would not help there."""
    if not total.past_horizon:
        return None
    behind = "" if newest_before is None else f" ({iso(newest_before)})"
    n = total.past_horizon
    it, they = ("it is", "it") if n == 1 else ("they are", "they")
    own = max(total.max_ts.values(), default=None)
    advice = "To backfill history, replay it into a database of its own (--db)."
    if own is not None and (newest_before is None or own > newest_before):
        advice = ("This replay stored newer events itself, so its events are out of time order by more than the "
                  "horizon (a file not sorted by ts, or predictions and outcomes replayed from separate files one "
                  "after the other): sort them by ts into one file (with the events stored before, when they are "
                  "of the same period) and replay that into a fresh database.")
    return (f"{counted(n, 'event')} of this replay {were(n)} dead-lettered past_horizon: {it} older than the "
            f"label horizon ({horizon}) behind the newest event already stored{behind}, so {they} could be neither "
            f"joined to their labels nor told from a copy. {advice}")


def expired_warning(maintenance: Counter[tuple[str, str]], newest: float | None, horizon: str,
                    partial: bool = False, in_order: bool = False) -> str | None:
    """What this replay stored only for its maintenance to expire it (new-user tryout: an old event in the first
    batch on an empty database was accepted, then expired at once, and nothing said so): None unless predictions it
    stored were expired unlabelled. Events are refused past_horizon only behind the watermark stored before their
    batch, so that any split of the events ends in the same state; one older than the horizon behind a newer event
    of the same replay is accepted, then expired here. Older predictions expiring as time moves on are not warned
    about (they are counted in `expired_predictions`). `partial`: the replay stored more predictions than its key
    log holds (stored_now.MAX_KEYS), so the count is among the first ones only. `in_order`: no event of the replay
    came more than the horizon behind an earlier one (BatchResult.behind == 0), so the expiry is what a live run
    would have done (new-user tryout: a sorted 150-day churn history replayed into a fresh database was told to
    "replay it into a database of its own (--db)", which it was); otherwise the replay's own order is the cause, and
    the advice is past_horizon_warning's: sort (verification tryout: an unsorted file replayed into a fresh database
    was told to replay it into a database of its own)."""
    n = maintenance.get(EXPIRED_STORED_NOW, 0)
    if not n:
        return None
    newest_at = "" if newest is None else f" ({iso(newest)})"
    one = n == 1 and not partial  # verification tryout: "1 predictions stored by this replay were expired"
    among = f"at least {n:,} (counted among the first {MAX_KEYS:,} new ones) predictions" if partial else \
        counted(n, "prediction")
    they, are, have, count_, them = ("it", "is", "has", "counts", "it") if one else \
        ("they", "are", "have", "count", "them")
    head = (f"{among} stored by this replay {were(1 if one else 2)} expired during it: {they} {are} more than the "
            f"label horizon ({horizon}) older than the newest event{newest_at} and {have} no outcome, so {they} "
            f"{count_} as expired, never labelled, and an outcome arriving for {them} later cannot join.")
    if in_order:
        return (f"{head} This replay's events came in time order, so a live run would have done the same: "
                f"{'this prediction' if one else 'these predictions'} got no outcome within the label horizon "
                f"(`labels.horizon`, {horizon}; lengthen it if outcomes can come later). Nothing to redo.")
    return (f"{head} This replay's own events came out of time order by more than the horizon (a file not sorted "
            "by ts, or predictions and outcomes replayed from separate files one after the other; old events are "
            "refused as past_horizon only when a newer event was stored before their batch): sort them by ts into "
            "one file and replay that into a fresh database.")


def conflict_warning(total: BatchResult) -> str | None:
    """Copies of a prediction that disagree with the one stored first (new-user tryout: they were counted as
    duplicates like exact copies, so results depending on arrival order went unseen): None unless there were."""
    n = total.counters.get(CONFLICTING, 0)
    if not n:
        return None
    return (f"{counted(n, 'duplicate prediction')} of this replay {'conflicts' if n == 1 else 'conflict'} with the "
            "copy stored first (the same prediction_id, model and variant with another score, ts or model_version, "
            "or a threshold of its own that flags it otherwise; "
            f"e.g. prediction_id {total.conflict_example!r}): the copy stored first counts and "
            f"{'that duplicate is' if n == 1 else 'the others are'} ignored, so the results "
            "depend on which arrived first. Send one prediction per (prediction_id, model, variant); a re-score "
            "needs its own variant or prediction_id.")
