"""ISO weeks (Monday 00:00 UTC to the next Monday) and which week a report covers by default."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import date, datetime, timezone

from ..config import ConfigError
from ..storage.store import Store
from ..readouts.windows import Window, default_at

WEEK_S = 7 * 86400
_WEEK = re.compile(r"^\s*(\d{4,9})-?W(\d{1,2})\s*$", re.IGNORECASE)
_EVENT_TIMES = "event times are 1970-01-01..9999-12-31"


@dataclass(frozen=True, slots=True)
class IsoWeek:
    """An ISO 8601 week, e.g. 2026-W48; its window is [Monday 00:00 UTC, next Monday 00:00 UTC)."""

    year: int
    week: int
    cut: float | None = None
    """Where a report stops reading a week it is inside of: the end of the bucket holding now (reported_part)."""

    @property
    def label(self) -> str:
        return f"{self.year}-W{self.week:02d}"

    @property
    def start(self) -> float:
        monday = date.fromisocalendar(self.year, self.week, 1)
        return datetime(monday.year, monday.month, monday.day, tzinfo=timezone.utc).timestamp()

    @property
    def end(self) -> float:
        return self.start + WEEK_S

    @property
    def until(self) -> float:
        """The end of the part of the week that is read: the week's end, or the cut before it."""
        return self.end if self.cut is None else min(self.end, self.cut)

    @property
    def window(self) -> Window:
        """The part of the week that is read (the whole week unless cut)."""
        return Window(self.start, self.until)

    def previous(self) -> IsoWeek:
        return week_of(self.start - 1.0)

    def days(self) -> list[tuple[str, float, float]]:
        """(ISO date, start, end) of the week's days that are read: seven, or those begun before the cut (the
        last one ending there)."""
        out = []
        for d in range(7):
            s = self.start + d * 86400
            if s >= self.until:
                break
            out.append((datetime.fromtimestamp(s, tz=timezone.utc).date().isoformat(), s, min(s + 86400, self.until)))
        return out


def week_of(ts: float) -> IsoWeek:
    """The ISO week containing an epoch timestamp (UTC)."""
    y, w, _ = datetime.fromtimestamp(ts, tz=timezone.utc).isocalendar()
    return IsoWeek(y, w)


def parse_week(text: str) -> IsoWeek:
    """'2026-W48' (or '2026W48') → IsoWeek; ConfigError for anything else, a week the year does not have, or a
    week no event can be in (ending before 1970 or after year 9999)."""
    m = _WEEK.match(text)
    if not m:
        raise ConfigError(f"--week: cannot parse {text!r}; use an ISO week like 2026-W48")
    year, week = int(m.group(1)), int(m.group(2))
    if year > 9999:
        raise ConfigError(f"--week: {text.strip()} is after 9999: no event can be in it ({_EVENT_TIMES})")
    try:
        date.fromisocalendar(year, week, 1)
    except ValueError:
        raise ConfigError(f"--week: {year} has no ISO week {week}") from None
    parsed = IsoWeek(year, week)
    if parsed.end <= 0.0:  # 0001-W01 was accepted and reported as an empty week '1-W01'
        raise ConfigError(f"--week: {text.strip()} ends before 1970-01-01: no event can be in it "
                          f"({_EVENT_TIMES})")
    return parsed


def has_data(store: Store, model: str | None, week: IsoWeek) -> bool:
    """True when some bucket of the model starts inside the week."""
    rng = store.bucket_range(model)
    if rng is None or rng[0] >= week.end or rng[1] < week.start:
        return False
    return bool(store.buckets(model, week.start, week.end, features=False))


def newest_prediction(store: Store, model: str | None, bucket_s: int = 3600) -> float | None:
    """Newest stored prediction time (meta watermark, else the start of the newest bucket), never past the bucket
    holding now (readouts.windows.default_at: one prediction stamped up to a day ahead of the clock, which
    ingestion accepts, must not pick tomorrow's week)."""
    at = default_at(store, model, bucket_s)
    if at is None:
        return None
    newest = store.newest_event("prediction")
    rng = store.bucket_range(model)
    newest = newest if newest is not None or rng is None else float(rng[1])
    return at - 1.0 if newest is None else min(newest, at - 1.0)


def reported_part(week: IsoWeek, store: Store, bucket_s: int) -> IsoWeek:
    """The week as a report reads it: a week holding now is cut at the end of the bucket holding now (the store's
    clock, as default_at cuts every default window), so a prediction stamped ahead of the clock is not counted
    (it was: 201 of 200 predictions and a daily row for tomorrow); a past week is read whole, and so is a week
    that has not begun (all it can hold is predictions stamped ahead of the clock)."""
    now_end = math.floor(float(store.clock()) / bucket_s) * bucket_s + bucket_s
    return replace(week, cut=now_end) if week.start < now_end < week.end else week


def default_week(store: Store, model: str | None, now: float, bucket_s: int = 3600) -> tuple[IsoWeek, str]:
    """The week a report covers when none is given, and why.

    1. the last complete ISO week before `now` (the clock) when it holds predictions — the live case;
    2. else the last complete ISO week before the newest stored prediction, when it holds predictions —
       a replayed history;
    3. else the week of the newest stored prediction (a partial week: all there is).
    """
    last = week_of(now).previous()
    if has_data(store, model, last):
        return last, "last complete ISO week before now"
    newest = newest_prediction(store, model, bucket_s)
    if newest is None:
        return last, "last complete ISO week before now (no predictions stored)"
    current = week_of(newest)
    before = current.previous()
    if has_data(store, model, before):
        return before, "last complete ISO week before the newest stored prediction"
    return current, "week of the newest stored prediction (partial: no complete week stored)"


def iso_day(ts: float) -> str:
    """ISO date (UTC) of a timestamp."""
    return (datetime.fromtimestamp(ts, tz=timezone.utc)).date().isoformat()


__all__ = ["IsoWeek", "WEEK_S", "default_week", "has_data", "iso_day", "parse_week", "reported_part", "week_of"]
