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

from rich.console import Console, RenderableType
from rich.progress import Progress, ProgressColumn, SpinnerColumn, Task
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

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


def _clock(seconds: float | None) -> str:
    """'0:01:05' (as rich's time columns), '-:--:--' when not known yet."""
    if seconds is None:
        return "-:--:--"
    m, sec = divmod(int(max(seconds, 0)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{sec:02d}"


ORDER = ("what", "bar", "pct", "events", "rate", "accepted", "dead", "stage", "elapsed", "eta")
"""Parts of the progress line, left to right; the counts (events … dead) are joined by ' · '."""
COUNTS = ("events", "rate", "accepted", "dead")
LADDER = (("stage", 1), ("elapsed", 1), ("events", 1), ("accepted", 1), ("dead", 1), ("stage", 2), ("what", 1),
          ("bar", 1), ("accepted", 2), ("rate", 2), ("eta", 1), ("pct", 1))
"""How the line gets shorter, one step at a time until it fits: (part, index of its next form); a part's last
form is '' (left out). The batch stage's short form and no elapsed time first, then short labels ('ev', 'ok',
'dead'), no batch stage, no label, no bar, no accepted, rate, time left or share; events and dead letters stay."""
BAR_MIN, BAR_MAX = 10, 40


def progress_forms(what: str, pct: float | None, events: int, rate: float, accepted: int, dead: int,
                   stage: tuple[str, int, int] | None, elapsed: float | None, eta: float | None
                   ) -> dict[str, tuple[str, ...]]:
    """Each part of the line in its forms, longest first (the bar's forms are 'shown' and ''); no bar, share or
    time left without a total (stdin), no time left before rich can estimate it."""
    st: tuple[str, ...] = ("", "", "")
    if stage is not None:
        name, done, of = stage
        st = ((f"(batch: storing {of:,})", f"storing {of:,}", "") if name == "storing" else
              (f"(batch: {name} {done:,} of {of:,})", f"{name} {done:,}/{of:,}", ""))
    bar = ("bar", "") if pct is not None else ("",)
    return {"what": (what, ""), "bar": bar, "pct": (f"{pct:3.0f}%", "") if pct is not None else ("",),
            "events": (f"{events:,} events", f"{events:,} ev"), "rate": (f"{rate:,.0f}/s", f"{rate:,.0f}/s", ""),
            "accepted": (f"accepted {accepted:,}", f"ok {accepted:,}", ""),
            "dead": (f"dead letters {dead:,}", f"dead {dead:,}"), "stage": st,
            "elapsed": (_clock(elapsed), ""),
            "eta": (f"{_clock(eta)} left", "") if pct is not None and eta is not None else ("",)}


def _join(texts: dict[str, str], bar: int) -> list[str]:
    """The line's pieces in order (the bar as a run of `bar` placeholder cells), empty parts left out."""
    counts = " · ".join(texts[k] for k in COUNTS if texts[k])
    out = []
    for k in ORDER:
        if k == "bar":
            if bar:
                out.append("━" * bar)
        elif k in COUNTS:
            if k == "events" and counts:
                out.append(counts)
        elif texts[k]:
            out.append(texts[k])
    return out


def fit_progress(forms: dict[str, tuple[str, ...]], width: int, floor: dict[str, int] | None = None
                 ) -> tuple[dict[str, str], int, dict[str, int]]:
    """The form of each part, the bar's width (0: no bar) and the form indexes used, for a line of at most
    `width` cells: the longest forms that fit, shortened along LADDER, never longer than `floor` (the forms an
    earlier frame needed, so the line does not flip between long and short forms as numbers grow); the bar takes
    what is left, BAR_MIN to BAR_MAX cells."""
    pick = {k: (floor or {}).get(k, 0) for k in forms}
    steps = iter(LADDER)
    while True:
        texts = {k: forms[k][min(pick[k], len(forms[k]) - 1)] for k in forms}
        fixed = _join(texts, 0)
        used = sum(Text(p).cell_len for p in fixed) + len(fixed) - 1 if fixed else 0
        room = width - used - 1
        if texts["bar"] and room >= BAR_MIN:
            return texts, min(BAR_MAX, room), pick
        if not texts["bar"] and used <= width:
            return texts, 0, pick
        step = next(steps, None)
        if step is None:
            return texts, 0, pick
        pick[step[0]] = max(pick[step[0]], step[1])


class FittedLine(ProgressColumn):
    """The whole progress line as one column, laid out for the console's width by `fit_progress` (rich's own
    columns ellipsise every part when the line is too long: 'repl… … 5,000 events …')."""

    def __init__(self, what: str, console: Console) -> None:
        super().__init__()
        self.what = what
        self.console = console
        self.width = -1
        self.floor: dict[str, int] = {}
        self.bar_cap = BAR_MAX
        """Per console width, the shortest forms and bar any frame needed: later frames use no longer ones."""

    def render(self, task: Task) -> RenderableType:
        f = task.fields
        pct = task.percentage if task.total else None
        forms = progress_forms(self.what, pct, f["events"], f["rate"], f["accepted"], f["dead"], f["stage"],
                               task.elapsed, task.time_remaining if pct is not None else None)
        width = self.console.width - 2  # 2: the spinner and its space
        if width != self.width:
            self.width, self.floor, self.bar_cap = width, {}, BAR_MAX
        texts, bar, self.floor = fit_progress(forms, width, self.floor)
        if bar:
            bar = self.bar_cap = min(bar, self.bar_cap)
        grid = Table.grid(padding=(0, 1))
        cells: list[RenderableType] = []
        for k in ORDER:
            if k == "bar":
                if bar:
                    cells.append(ProgressBar(total=task.total, completed=task.completed, width=bar))
            elif k in COUNTS:
                counts = " · ".join(texts[c] for c in COUNTS if texts[c])
                if k == "events" and counts:
                    cells.append(Text(counts))
            elif texts[k]:
                cells.append(Text(texts[k], style="dim" if k == "stage" else ""))
        for _ in cells:
            grid.add_column(no_wrap=True)
        grid.add_row(*cells)
        return grid


class IngestProgress:
    """A progress line on `console` (stderr) for `what`: share done, events stored, events/s, accepted, dead
    letters, the current batch's stage, elapsed time and time left, fitted to the width (`fit_progress`).
    `total` is in the caller's unit (bytes of a file, seconds of event time); None: no bar length (stdin)."""

    def __init__(self, console: Console, what: str, total: float | None, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.t0 = clock()
        self.events = self.accepted = self.dead = 0
        self.bar = Progress(SpinnerColumn(), FittedLine(what, console), console=console, refresh_per_second=4)
        self.task = self.bar.add_task(what, total=total, events=0, rate=0.0, accepted=0, dead=0, stage=None)

    def __enter__(self) -> IngestProgress:
        self.bar.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.bar.update(self.task, stage=None)  # the last frame shows the totals, not a finished batch's stage
        self.bar.stop()

    def add(self, result: BatchResult) -> None:
        """Count a stored batch: its records, accepted events and dead letters."""
        self.accepted += result.accepted
        self.dead += result.dead
        self.events += result.records

    def tick(self, stage: str, done: int, of: int) -> None:
        """How far the current batch got (pipeline.Tick): shown next to the counts."""
        self.bar.update(self.task, stage=(stage, done, of))

    def update(self, completed: float) -> None:
        """Move the bar to `completed` and refresh the counts and the rate."""
        elapsed = self.clock() - self.t0
        rate = self.events / elapsed if elapsed > 0 else 0.0
        self.bar.update(self.task, completed=completed, events=self.events, rate=rate, accepted=self.accepted,
                        dead=self.dead)
