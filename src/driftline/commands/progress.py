"""Progress on a terminal for long ingests (replay, demo): events/s, accepted and dead letters, updated often.

A batch is one transaction and the display can only move between batches, so `Pacer` sizes the batches to take
about half a second each (bounded by the configured batch size): the first update comes within a second and the
bar never stalls for the 10 s a 20,000-event batch takes on a loaded machine. Shown only on a terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

from ..ingest.pipeline import BatchResult


class Pacer:
    """Batch sizes that keep a batch near `target_s` seconds: starts at `first`, then follows the measured rate,
    growing at most 4× a step, never above `cap` nor below `floor`."""

    def __init__(self, clock: Callable[[], float], cap: int, first: int = 500, target_s: float = 0.5,
                 floor: int = 100) -> None:
        self.clock, self.cap, self.target_s, self.floor = clock, cap, target_s, min(floor, cap)
        self.size = max(self.floor, min(first, cap))
        self.started: float | None = None

    def next_size(self) -> int:
        """The size of the batch starting now."""
        self.started = self.clock()
        return self.size

    def done(self, n: int) -> None:
        """A batch of `n` records was read and stored: size the next one from its rate."""
        if self.started is None or n <= 0:
            return
        elapsed = self.clock() - self.started
        want = self.cap if elapsed <= 0 else int(n / elapsed * self.target_s)
        self.size = max(self.floor, min(self.cap, want, 4 * self.size))


def _fmt_fields(events: int, rate: float, accepted: int, dead: int) -> dict[str, str]:
    return {"events": f"{events:,}", "rate": f"{rate:,.0f}", "accepted": f"{accepted:,}", "dead": f"{dead:,}"}


class IngestProgress:
    """A rich progress bar on `console` (stderr) for `what`: share done, events, events/s, accepted, dead letters,
    time left. `total` is in the caller's unit (bytes of a file, seconds of event time); None: no bar length."""

    def __init__(self, console: Console, what: str, total: float | None, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.t0 = clock()
        self.events = self.accepted = self.dead = 0
        self.bar = Progress(TextColumn(what), BarColumn(), TaskProgressColumn(),
                            TextColumn("{task.fields[events]} events · {task.fields[rate]}/s · accepted "
                                       "{task.fields[accepted]} · dead letters {task.fields[dead]}"),
                            TimeRemainingColumn(), console=console, transient=False)
        self.task = self.bar.add_task(what, total=total, **_fmt_fields(0, 0.0, 0, 0))

    def __enter__(self) -> IngestProgress:
        self.bar.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.bar.stop()

    def add(self, result: BatchResult | None = None, events: int = 0) -> None:
        """Count a stored batch (its records, accepted, dead letters), or `events` read but not stored yet."""
        if result is not None:
            self.accepted += result.accepted
            self.dead += result.dead
            events += result.records
        self.events += events

    def update(self, completed: float) -> None:
        """Move the bar to `completed` and refresh the counts and the rate."""
        elapsed = self.clock() - self.t0
        rate = self.events / elapsed if elapsed > 0 else 0.0
        self.bar.update(self.task, completed=completed, **_fmt_fields(self.events, rate, self.accepted, self.dead))
