"""Replay progress: paced batches (updates at least every second), counts on the bar, silence off a terminal."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from driftline.commands.ingest import run_replay
from driftline.commands.progress import Ramp
from driftline.config import Config
from driftline.context import Context


def _lines(n: int, bad: set[int] = frozenset()) -> str:  # type: ignore[assignment]
    good = ('{"type":"prediction","prediction_id":"p%d","model":"fraud","ts":"2026-11-01T00:00:00Z",'
            '"score":0.4,"threshold":0.5}')
    return "".join(("{oops" if i in bad else good % i) + "\n" for i in range(n))


def test_ramp_starts_small_and_grows_to_the_batch_size() -> None:
    r = Ramp(20_000)
    assert [r.next_size() for _ in range(5)] == [1000, 4000, 16000, 20000, 20000]
    assert [Ramp(300).next_size() for _ in range(2)] == [300, 300]


def test_a_batch_reports_its_progress_while_it_runs(tmp_path: Path) -> None:
    """One 5,000-event batch tells the display how far it got, several times, before it is stored."""
    from driftline.ingest.isolation import TICK
    from driftline.ingest.pipeline import Pipeline
    from driftline.ingest.replay import replay
    from driftline.storage.store import Store

    f = tmp_path / "e.jsonl"
    f.write_text(_lines(5000, bad={3}))
    store = Store(f"sqlite:///{tmp_path / 't.db'}")
    store.migrate()
    seen: list[tuple[str, int, int]] = []
    batches: list[int] = []
    try:
        total = replay(Pipeline(Config(), store), str(f), lambda r, _pos: batches.append(r.records), 20_000,
                       tick=lambda *t: seen.append(t))
    finally:
        store.close()
    assert batches == [5000] and total.accepted == 4999
    assert [t for t in seen if t[0] == "decoding"] == [("decoding", i, 5000) for i in range(0, 5000, TICK)]
    # applying is one column-wise step on the batch path (core/batch.py): told once, when it starts
    assert [t for t in seen if t[0] == "applying"] == [("applying", 0, 4999)]
    stages = [t[0] for t in seen]
    assert stages.index("applying") > max(i for i, s in enumerate(stages) if s == "decoding")
    assert seen[-1] == ("storing", 5000, 5000)


def _ctx(tmp_path: Path, terminal: bool) -> tuple[Context, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(config=Config(), db_url=f"sqlite:///{tmp_path / 'p.db'}",
                  console=Console(file=out, force_terminal=terminal, width=120),
                  err=Console(file=err, force_terminal=terminal, width=120))
    return ctx, out, err


def test_progress_shows_events_rate_accepted_and_dead_letters(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from driftline.commands.progress import IngestProgress

    calls: list[tuple[str, object]] = []
    update, tick = IngestProgress.update, IngestProgress.tick

    def spy_update(self: IngestProgress, completed: float) -> None:
        calls.append(("update", self.events))
        update(self, completed)

    def spy_tick(self: IngestProgress, stage: str, done: int, of: int) -> None:
        calls.append(("tick", stage))
        tick(self, stage, done, of)

    monkeypatch.setattr(IngestProgress, "update", spy_update)
    monkeypatch.setattr(IngestProgress, "tick", spy_tick)
    f = tmp_path / "e.jsonl"
    f.write_text(_lines(3000, bad={5, 2500}))  # batches of 1,000 then 2,000
    ctx, _, err = _ctx(tmp_path, terminal=True)
    try:
        doc = run_replay(ctx, str(f), batch_size=20_000)
    finally:
        ctx.close()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", err.getvalue())
    assert doc["accepted"] == 2998 and doc["dead_lettered"] == 2
    # the last state drawn when the bar stops
    assert "3,000 events" in text and "accepted 2,998" in text and "dead letters 2" in text and "/s" in text
    # an update after the first 1,000-event batch, before the rest; inside each batch, its stages
    assert [c for c in calls if c[0] == "update"] == [("update", 1000), ("update", 3000)]
    stages = [c[1] for c in calls if c[0] == "tick"]
    assert stages == ["decoding", "applying", "storing"] * 2


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


def test_no_progress_with_json_even_on_a_terminal(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import argparse

    from driftline.commands.ingest import cmd_replay

    f = tmp_path / "e.jsonl"
    f.write_text(_lines(1000))
    ctx, out, err = _ctx(tmp_path, terminal=True)
    try:
        assert cmd_replay(ctx, argparse.Namespace(path=str(f), batch_size=20_000, json=True)) == 0
    finally:
        ctx.close()
    assert err.getvalue() == "" and '"accepted": 1000' in capsys.readouterr().out
