"""Progress on a terminal for long ingests (replay, demo): events/s, accepted and dead letters, updated often.

A batch is one transaction, and a 20,000-event batch takes 2–14 s depending on the machine's load. So the bar
(1) starts with small batches, growing 4× a step up to the configured size (`Ramp`: the first counts and rate
show within about a second; each batch also has a fixed cost of ~0.3 s here, so the two extra batches cost a
fixed ~0.6 s per run, not a share of it), and (2) is told
inside each batch how far it got (decoding, applying, storing: `IngestProgress.tick`), so it moves between
batches too. Shown only on a terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import (BarColumn, Progress, SpinnerColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from ..ingest.pipeline import BatchResult

FIRST = 1000
"""Size of the first batch while a progress display shows."""
GROWTH = 4
"""Each batch this many times the previous one, up to the configured size."""


class Ramp:
    """Batch sizes FIRST, 4×FIRST, 16×FIRST … up to `cap`: early progress without many small transactions."""

    def __init__(self, cap: int, first: int = FIRST) -> None:
        self.cap = cap
        self.size = max(1, min(first, cap))

    def next_size(self) -> int:
        """The size of the batch starting now; the next one is GROWTH times as large (at most `cap`)."""
        size = self.size
        self.size = min(self.cap, GROWTH * self.size)
        return size


def _fmt_fields(events: int, rate: float, accepted: int, dead: int, stage: str = "") -> dict[str, str]:
    return {"events": f"{events:,}", "rate": f"{rate:,.0f}", "accepted": f"{accepted:,}", "dead": f"{dead:,}",
            "stage": stage}


class IngestProgress:
    """A rich progress bar on `console` (stderr) for `what`: share done, events stored, events/s, accepted, dead
    letters, the current batch's stage, time left. `total` is in the caller's unit (bytes of a file, seconds of
    event time); None: no bar length (stdin)."""

    def __init__(self, console: Console, what: str, total: float | None, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.t0 = clock()
        self.events = self.accepted = self.dead = 0
        self.bar = Progress(SpinnerColumn(), TextColumn(what), BarColumn(), TaskProgressColumn(),
                            TextColumn("{task.fields[events]} events · {task.fields[rate]}/s · accepted "
                                       "{task.fields[accepted]} · dead letters {task.fields[dead]} "
                                       "[dim]{task.fields[stage]}[/dim]"),
                            TimeElapsedColumn(), TimeRemainingColumn(), console=console, refresh_per_second=4)
        self.task = self.bar.add_task(what, total=total, **_fmt_fields(0, 0.0, 0, 0))

    def __enter__(self) -> IngestProgress:
        self.bar.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.bar.stop()

    def add(self, result: BatchResult) -> None:
        """Count a stored batch: its records, accepted events and dead letters."""
        self.accepted += result.accepted
        self.dead += result.dead
        self.events += result.records

    def tick(self, stage: str, done: int, of: int) -> None:
        """How far the current batch got (pipeline.Tick): shown next to the counts."""
        self.bar.update(self.task, stage=f"(batch: {stage} {done:,} of {of:,})" if stage != "storing"
                        else f"(batch: storing {of:,})")

    def update(self, completed: float) -> None:
        """Move the bar to `completed` and refresh the counts and the rate."""
        elapsed = self.clock() - self.t0
        rate = self.events / elapsed if elapsed > 0 else 0.0
        self.bar.update(self.task, completed=completed, **_fmt_fields(self.events, rate, self.accepted, self.dead))
