"""Pages a replay batch dirties, per event and per table, on a store of the stream's size: why a replay's store
writes cost more per event on a bigger store (issue 18).

The stream but its last --tail lines is replayed into SQLite; then the tail is replayed with checkpoints off, and
the -wal's frames are counted by the table or index owning their page (dbstat). Each frame is a 4 KiB page written
at a commit (and again by the checkpoint that copies it into the database): the work grows with frames per event,
not with events. On the simulated stream (last 40,000 events), 96 k events (--per-day 1800) gave 0.088 frames per
event, 1.07 M (--per-day 20000) 0.289; predictions 0.022 -> 0.112 and outcomes 0.010 -> 0.052 (5x): labels move into
predictions made days before and outcomes go in among the ids of those days, so a 20,000-event batch touches a few
thousand pages of each join table (~4 rows a page at 1.07 M, ~30 at 96 k), and each is written whole.

Usage: python benchmarks/wal_frames_bench.py [--per-day N] [--days D] [--workdir DIR] [--tail LINES]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import struct
from collections import Counter

from sqlalchemy import event

from bench_common import count_lines, simulated_stream
from driftline.config import Config
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import replay
from driftline.storage.store import Store

WAL_HEADER, FRAME_HEADER = 32, 24


def wal_pages(wal: str, page_size: int) -> list[int]:
    """The page number of every frame of a -wal file, in order."""
    with open(wal, "rb") as f:
        data = f.read()
    step = FRAME_HEADER + page_size
    return [struct.unpack_from(">I", data, off)[0] for off in range(WAL_HEADER, len(data) - step + 1, step)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tail", type=int, default=40_000)
    args, _ = ap.parse_known_args()
    work, path = simulated_stream(1800)
    n = count_lines(path)
    tail = min(args.tail, n // 2)
    head = os.path.join(work, "frames.jsonl")
    with open(path, "rb") as src, open(head, "wb") as dst:  # the same path, first shorter: replay resumes at its end
        for i, line in enumerate(src):
            if i >= n - tail:
                break
            dst.write(line)
    db = os.path.join(work, "frames.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    store = Store(f"sqlite:///{db}")
    store.migrate()
    replay(Pipeline(Config(), store), head)
    store.close()
    shutil.copy(path, head)
    store = Store(f"sqlite:///{db}")
    event.listen(store.engine, "connect", lambda c, _r: c.execute("PRAGMA wal_autocheckpoint=0"))
    store.engine.dispose()
    done = replay(Pipeline(Config(), store), head)
    copy = db + ".walcopy"
    shutil.copy(db + "-wal", copy)  # closing the store checkpoints and removes the -wal
    store.close()
    conn = sqlite3.connect(db)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    owner = dict(conn.execute("SELECT pageno, name FROM dbstat"))
    pages = wal_pages(copy, page_size)
    frames = Counter(owner.get(p, "(freed)") for p in pages)
    distinct = Counter(owner.get(p, "(freed)") for p in set(pages))
    sizes = dict(conn.execute("SELECT name, count(*) FROM dbstat GROUP BY name"))
    conn.close()
    os.remove(copy)
    events = done.records
    print(f"events before the tail       {n - tail:,}")
    print(f"tail replayed                {events:,} events, {len(pages):,} frames, {len(set(pages)):,} pages")
    print(f"frames per event             {len(pages) / max(events, 1):.3f}")
    print(f"  {'table or index':<34} {'frames/event':>12} {'pages':>8} {'of':>8}")
    for name, count in frames.most_common(8):
        print(f"  {name:<34} {count / max(events, 1):12.4f} {distinct[name]:8,} {sizes.get(name, 0):8,}")


if __name__ == "__main__":
    main()
