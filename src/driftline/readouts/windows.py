"""Window selection: `[at − window, at)` by prediction time, aligned to bucket boundaries."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..config import format_duration
from ..core.events import iso
from ..storage.store import BucketRow, Store
from ..core.stats import BucketStats, merge


@dataclass(frozen=True, slots=True)
class Window:
    """A half-open interval of prediction time, in epoch seconds."""

    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def to_json(self) -> dict[str, object]:
        return {"start": iso(self.start), "end": iso(self.end), "seconds": self.seconds,
                "label": format_duration(self.seconds)}


def window_ending(at: float, length_s: float, bucket_s: int) -> Window:
    """Window of `length_s` ending at `at` rounded up to a bucket boundary."""
    end = math.ceil(at / bucket_s) * bucket_s
    if end == at and at % bucket_s == 0:
        end = int(at)
    return Window(end - length_s, end)


def default_at(store: Store, model: str | None, bucket_s: int) -> float | None:
    """Newest prediction time stored, so a replayed history shows its last window."""
    rng = store.bucket_range(model)
    if rng is None:
        return None
    newest = store.newest_event("prediction")
    end_of_last_bucket = rng[1] + bucket_s
    if newest is None:
        return float(end_of_last_bucket)
    return min(float(newest) + 1e-6, float(end_of_last_bucket))


def window_rows(store: Store, model: str | None, window: Window, variant: str | None = None,
                model_version: str | None = None, features: bool | str = True) -> list[BucketRow]:
    """The window's stored buckets (all shards, versions and variants unless filtered)."""
    return store.buckets(model, window.start, window.end, variant, model_version, features)


def merged(rows: list[BucketRow]) -> BucketStats:
    """Sum of the rows' statistics."""
    return merge(r.stats for r in rows)
