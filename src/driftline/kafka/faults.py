"""Deterministic crash points for the crash tests: DRIFTLINE_FAULT="point:N[,point:N]" kills the process with
SIGKILL the N-th time the point is reached. Points: mid_batch (store writes done, transaction not committed),
after_store_commit (state committed, Kafka offsets not), revoke / assign (inside a rebalance callback with
partitions). Unset (production): every hit is a no-op."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable, Mapping
from typing import Any

ENV = "DRIFTLINE_FAULT"
POINTS = ("mid_batch", "after_store_commit", "revoke", "assign")

log = logging.getLogger(__name__)


def parse(spec: str | None) -> dict[str, int]:
    """'after_store_commit:3,revoke:1' → {'after_store_commit': 3, 'revoke': 1}; ValueError on a bad spec."""
    out: dict[str, int] = {}
    for part in (spec or "").split(","):
        part = part.strip()
        if not part:
            continue
        point, _, n = part.partition(":")
        if point not in POINTS:
            raise ValueError(f"{ENV}: unknown fault point {point!r} (known: {', '.join(POINTS)})")
        out[point] = int(n or "1")
        if out[point] < 1:
            raise ValueError(f"{ENV}: count must be at least 1 in {part!r}")
    return out


class Faults:
    """Counts hits per point and kills the process at the configured one."""

    def __init__(self, plan: Mapping[str, int] | None = None,
                 kill: Callable[[], Any] = lambda: os.kill(os.getpid(), signal.SIGKILL)) -> None:
        self.plan = dict(plan or {})
        self.hits: dict[str, int] = {}
        self.kill = kill

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Faults:
        """The plan in DRIFTLINE_FAULT (empty when unset)."""
        return cls(parse((os.environ if env is None else env).get(ENV)))

    @property
    def active(self) -> bool:
        return bool(self.plan)

    def hit(self, point: str) -> None:
        """Count one pass through `point`; SIGKILL the process when it is the planned one."""
        if point not in self.plan:
            return
        self.hits[point] = self.hits.get(point, 0) + 1
        if self.hits[point] == self.plan[point]:
            log.warning("fault injection: killing the process at %s #%d", point, self.hits[point])
            for h in logging.getLogger().handlers:
                h.flush()
            self.kill()

    def wrap_store(self, store: Any) -> None:
        """Hit mid_batch inside each guarded batch transaction, after its writes and before its commit."""
        if "mid_batch" not in self.plan:
            return
        original = store.commit_batch

        def commit_batch(conn: Any, *args: Any, **kwargs: Any) -> None:
            original(conn, *args, **kwargs)
            if kwargs.get("expected_positions"):
                self.hit("mid_batch")

        store.commit_batch = commit_batch
