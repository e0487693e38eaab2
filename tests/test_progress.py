"""Replay progress: paced batches (updates at least every second), counts on the bar, silence off a terminal."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from driftline.commands.ingest import run_replay
from driftline.commands.progress import Pacer
from driftline.config import Config
from driftline.context import Context


class FakeClock:
    """A monotonic clock that advances only when the test moves it."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _lines(n: int, bad: set[int] = frozenset()) -> str:  # type: ignore[assignment]
    good = ('{"type":"prediction","prediction_id":"p%d","model":"fraud","ts":"2026-11-01T00:00:00Z",'
            '"score":0.4,"threshold":0.5}')
    return "".join(("{oops" if i in bad else good % i) + "\n" for i in range(n))


def test_pacer_starts_small_follows_the_rate_and_stays_bounded() -> None:
    clock = FakeClock()
    p = Pacer(clock, cap=20_000, first=500, target_s=0.5)
    sizes = []
    for _ in range(8):  # a machine doing 2,000 events/s: batches settle at ~1,000 (0.5 s)
        n = p.next_size()
        sizes.append(n)
        clock.t += n / 2000
        p.done(n)
    assert sizes[0] == 500 and all(s == 1000 for s in sizes[1:])
    assert all(s / 2000 <= 1.0 for s in sizes)  # every batch, hence every update, within a second
    fast = Pacer(clock, cap=3000)
    seen = []
    for _ in range(6):  # instant batches: growth at most 4x a step, capped at the configured batch size
        seen.append(fast.next_size())
        fast.done(seen[-1])
    assert seen == [500, 2000, 3000, 3000, 3000, 3000]


def _ctx(tmp_path: Path, terminal: bool) -> tuple[Context, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(config=Config(), db_url=f"sqlite:///{tmp_path / 'p.db'}",
                  console=Console(file=out, force_terminal=terminal, width=120),
                  err=Console(file=err, force_terminal=terminal, width=120))
    return ctx, out, err


def test_progress_shows_events_rate_accepted_and_dead_letters(tmp_path: Path) -> None:
    f = tmp_path / "e.jsonl"
    f.write_text(_lines(3000, bad={5, 2500}))
    ctx, _, err = _ctx(tmp_path, terminal=True)
    try:
        doc = run_replay(ctx, str(f), batch_size=20_000)
    finally:
        ctx.close()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", err.getvalue())
    assert doc["accepted"] == 2998 and doc["dead_lettered"] == 2
    assert "3,000 events" in text and "accepted 2,998" in text and "dead letters 2" in text and "/s" in text
    # more than one update before the end: the first (500-event) batch is shown before the rest is read
    assert "500 events" in text


def test_paced_replay_stores_what_an_unpaced_one_does(tmp_path: Path) -> None:
    f = tmp_path / "e.jsonl"
    f.write_text(_lines(4000, bad={7}))
    docs = []
    for terminal in (True, False):
        sub = tmp_path / str(terminal)
        sub.mkdir()
        ctx, _, _ = _ctx(sub, terminal)
        try:
            docs.append(run_replay(ctx, str(f), batch_size=20_000))
            docs.append(run_replay(ctx, str(f), batch_size=20_000))  # a re-run resumes: nothing new
        finally:
            ctx.close()
    assert docs[0] == docs[2] and docs[1] == docs[3] and docs[1]["records"] == 0


def test_no_progress_off_a_terminal(tmp_path: Path) -> None:
    f = tmp_path / "e.jsonl"
    f.write_text(_lines(1000))
    ctx, out, err = _ctx(tmp_path, terminal=False)
    try:
        run_replay(ctx, str(f))
    finally:
        ctx.close()
    assert err.getvalue() == "" and out.getvalue() == ""
