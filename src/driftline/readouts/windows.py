"""Window selection: `[end − window, end)` by prediction time, where `end` is `at` aligned down to a bucket
boundary, so a window never holds a prediction at or after `at` (a backtest never sees its future)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..durations import format_duration
from ..core.events import iso
from ..core.limits import MAX_FUTURE_S
from ..storage.compaction import COMPACTED_SHARD, DAY_S, compacted_days, due_cutoff
from ..storage.bucket_row import BucketRow
from ..storage.store import Store
from ..core.stats import BucketStats, merge
from ..core.flag_range import FlagRange
from ..core.window_sum import flag_counts, sum_encoded
from ..analysis.flag_thresholds import FlagThresholds, flag_thresholds, recorded_thresholds, with_recorded


@dataclass(frozen=True, slots=True)
class Window:
    """A half-open interval of prediction time, in epoch seconds."""

    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def to_json(self) -> dict[str, object]:
        """Bounds, length and label as shown; a window reaching before 1970 (`--at 1970-01-01`) is shown from
        1970-01-01, where events begin (it read '1969-12-25 → 1970-01-01'), with the length it then has."""
        start = max(self.start, 0.0)
        return {"start": iso(start), "end": iso(self.end), "seconds": self.end - start,
                "label": format_duration(self.end - start)}


def window_ending(at: float, length_s: float, bucket_s: int) -> Window:
    """Window of `length_s` ending at the last bucket boundary at or before `at`: buckets are the smallest unit
    stored, so a bucket holding `at` would hold predictions after it (issue 15: `--at` must not leak the future)."""
    end = math.floor(at / bucket_s) * bucket_s
    return Window(end - length_s, end)


def default_at(store: Store, model: str | None, bucket_s: int) -> float | None:
    """The end of the bucket holding the newest prediction stored (a boundary after every stored prediction), so a
    replayed history shows its last window, newest bucket included; never past the end of the bucket holding now
    (the store's clock): ingestion takes events up to a day ahead of the clock, and one prediction from a producer
    whose clock runs 23 h fast moved every default window a day into the future, dropping a day of real data from
    "the last 7 days" (SRE tryout)."""
    rng = store.bucket_range(model)
    if rng is None:
        return None
    newest = store.newest_event("prediction")
    end = float(rng[1] + bucket_s)
    if newest is not None:
        end = min(math.floor(newest / bucket_s) * bucket_s + bucket_s, end)
    now_end = math.floor(float(store.clock()) / bucket_s) * bucket_s + bucket_s
    return float(min(end, now_end)) if end > now_end >= end - MAX_FUTURE_S - bucket_s else end


def window_rows(store: Store, model: str | None, window: Window, variant: str | None = None,
                model_version: str | None = None, features: bool | str = True) -> list[BucketRow]:
    """The window's stored buckets (all shards, versions and variants unless filtered). A compacted day the window
    holds only part of is left out whole: its day row would bring predictions outside the window, and an hourly
    row written there after compaction (a late label, a replayed old event) is only a change to the day row, which
    alone read as labels without predictions ('invalid proportion 20/0', verify tryout)."""
    rows = store.buckets(model, window.start, window.end, variant, model_version, features)
    rows = [r for r in rows if r.shard != COMPACTED_SHARD or r.bucket_start + DAY_S <= window.end]
    if window.start % DAY_S == 0 and window.end % DAY_S == 0:
        return rows  # whole days: every day row and every later hourly row of its day are in
    cut = set(cut_days(store, model, window))
    return [r for r in rows if (int(r.bucket_start) // DAY_S) * DAY_S not in cut] if cut else rows


def cut_days(store: Store, model: str | None, window: Window) -> list[int]:
    """Compacted days the window holds only part of (it starts or ends inside them): window_rows leaves them out,
    since a day row cannot be split; a window from and to midnight (UTC) holds them whole."""
    days = compacted_days(store, model, window.start - DAY_S + 1, window.end)
    return [d for d in days if d < window.start or d + DAY_S > window.end]


def shift_keeping_days(store: Store, model: str | None, window: Window, shift_s: float, horizon_s: float) -> float:
    """`shift_s` (a look-back such as calibration's maturity period), rounded up to whole days when the window is
    whole UTC days and the shifted window reaches history that is compacted or due (before the compaction cutoff,
    or holding a compacted day): compacted history is kept in day rows, so a shifted window cutting two of them
    left out up to two days' predictions after `driftline compact` and read otherwise than before it. Rounding up
    only waits longer, never calls labels matured earlier."""
    if window.start % DAY_S or window.end % DAY_S or shift_s % DAY_S == 0:
        return shift_s
    start, end = window.start - shift_s, window.end - shift_s
    cutoff = due_cutoff(store, horizon_s)  # what will be compacted, whether or not it is yet
    if (cutoff is None or start >= cutoff) and not compacted_days(store, model, start - DAY_S + 1, end):
        return shift_s
    return float(math.ceil(shift_s / DAY_S) * DAY_S)


def cut_days_note(days: list[int]) -> str | None:
    """What a reader must know when a window cut compacted days: which, and how to count them."""
    if not days:
        return None
    return (f"{len(days)} compacted day{'s' if len(days) > 1 else ''} ({', '.join(iso(d)[:10] for d in days)}) "
            "left out: hourly buckets past the label horizon are merged into UTC days, and this window holds only "
            "part of these; a window from and to midnight UTC counts them")


def merged(rows: list[BucketRow]) -> BucketStats:
    """Sum of the rows' statistics: from the encoded rows when none is decoded and no features were asked for
    (core.window_sum: the same sum without each bucket's dense arrays), else merge."""
    datas = [r.data for r in rows if not r.features]
    if rows and len(datas) == len(rows) and all(d is not None for d in datas):
        records: list[tuple[FlagRange | None, int]] = []
        total = sum_encoded(datas, records)  # type: ignore[arg-type]
        for r, record in zip(rows, records):  # for flags_in_force, which reads the same rows' flag records
            r.keep_flag_record(record)
        return total
    return merge(r.stats for r in rows)


def flags_in_force(rows: list[BucketRow], configured: float) -> FlagThresholds:
    """The threshold(s) the rows' predictions were flagged at, read bucket by bucket from the encoded rows (a
    decoded one when it was decoded): the ranges recorded at ingest, or, when a row was written by an older
    version, inferred from counts and histograms; nothing is kept decoded, so a long window costs no memory."""
    records = [r.flag_record() for r in rows]
    recorded = recorded_thresholds(records, configured)
    if recorded is not None:
        return recorded
    older = [n > 0 and (rng is None or rng[2] == 0) for rng, n in records]
    inferred = flag_thresholds(((r.stats.conf, r.stats.hist) if r.data is None else flag_counts(r.data)
                                for r, old in zip(rows, older) if old), configured)
    known = recorded_thresholds((rec for rec, old in zip(records, older) if not old), configured)
    return with_recorded(inferred, known)
