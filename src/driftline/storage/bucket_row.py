"""One stored bucket as the analysis queries read it: its key and its statistics, decoded lazily."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.flag_range import FlagRange
from ..core.stats import BucketStats
from ..core.window_sum import flag_record


@dataclass(frozen=True, slots=True)
class BucketRow:
    """One stored bucket: its key and its statistics, decoded from the stored bytes on first use (a window's sum
    without features reads the bytes instead: readouts.windows.merged); the bytes are dropped once decoded."""

    model: str
    model_version: str
    variant: str
    bucket_start: int
    shard: int
    _held: list[bytes | BucketStats | None] = field(compare=False, repr=False)
    """[the encoded bucket, its encoded feature histograms or None] until `stats` is first read, then [its
    BucketStats]."""
    features: bool | str = True
    """What `stats` decodes of the feature histograms (BucketStats.from_bytes)."""
    _flags: list[tuple[FlagRange | None, int]] = field(default_factory=list, compare=False, repr=False)
    """[flag_record of the bucket] once a window sum decoded it (readouts.windows.merged), else []."""

    @classmethod
    def encoded(cls, model: str, model_version: str, variant: str, bucket_start: int, shard: int, data: bytes,
                features: bool | str = True, feature_data: bytes | None = None) -> BucketRow:
        """A row from its stored bytes: the `buckets` blob and its `bucket_features` row's (None: none read)."""
        return cls(model, model_version, variant, bucket_start, shard, [data, feature_data], features)

    @property
    def stats(self) -> BucketStats:
        held = self._held[0]
        if isinstance(held, BucketStats):
            return held
        stats = BucketStats.from_bytes(held, self.features, self._held[1])  # type: ignore[arg-type]
        self._held[:] = [stats]
        return stats

    @property
    def data(self) -> bytes | None:
        """The encoded bucket while `stats` was not read (a caller may have changed the decoded one since)."""
        held = self._held[0]
        return None if isinstance(held, BucketStats) else held

    def flag_record(self) -> tuple[FlagRange | None, int]:
        """The bucket's recorded flag range and prediction count (core.window_sum.flag_record): from `stats` once
        read, else as a window sum kept them, else decoded from the bytes."""
        held = self._held[0]
        if isinstance(held, BucketStats):  # decoded (a caller may have changed it since): its own
            return held.flag_range, held.predictions
        return self._flags[0] if self._flags else flag_record(held)

    def keep_flag_record(self, record: tuple[FlagRange | None, int]) -> None:
        """Remember the flag record a window sum read from this bucket's bytes."""
        self._flags[:] = [record]
