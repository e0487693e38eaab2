"""The process's garbage-collector settings, set once at start-up by the CLI (the composition root).

Ingestion allocates a few container objects per event (join records, rows, feature dicts); with CPython's default
first-generation threshold (700) a replay ran ~900 collections that cost ~15 % of its CPU, each one re-scanning the
survivors of the batch being built. Reference counting frees nearly all of it anyway; the collector is only there
for cycles. A 20,000-event batch holds up to ~100,000 young tracked objects at once (~210,000 at 50,000 events;
replay's default is 30,000), so the first generation waits for more than that: at 70,000 every batch still paid one
collection of ~10 ms (it walks the batch's large lists, ~3 % of a replay). Memory cost: cyclic garbage (~150 objects
a batch) waits longer; at most FIRST_GENERATION young objects wait for a collection (tens of MB at worst).
"""

from __future__ import annotations

import gc
from collections.abc import Callable

FIRST_GENERATION = 250_000
"""Allocations (net of deallocations) of tracked objects between first-generation collections (CPython: 700):
above the young objects a default batch holds at once."""
OLDER_GENERATIONS = (20, 20)
"""First-generation collections per second-generation one, and those per full collection (CPython: 10, 10)."""


def tune_for_batches() -> None:
    """Collect far less often (see the module docstring). Nothing is frozen: in a process that calls the CLI many
    times (tests, notebooks) freezing would keep every cycle alive at that moment for good."""
    gc.set_threshold(FIRST_GENERATION, *OLDER_GENERATIONS)


class ByteCollector:
    """Runs the cyclic collector after every `every_bytes` of stored payload. The collector counts allocations, not
    bytes: a batch can be left inside reference cycles (kafka-python raises and catches exceptions inside poll();
    each traceback keeps the calling frames alive, with the batch in their locals) that only a collection frees.
    With 1 MB events a few hundred batches of such garbage pile up between two collections (`driftline run` grew
    to 1.1 GB on 900 events of 1 MB; benchmarks/big_events_bench.py); collecting per stored bytes bounds it."""

    def __init__(self, every_bytes: int, collect: Callable[[], object] = gc.collect) -> None:
        self.every_bytes, self.collect = every_bytes, collect
        self.pending = 0
        """Payload bytes stored since the last collection."""

    def stored(self, nbytes: int) -> None:
        """Count a stored batch's payload bytes."""
        self.pending += nbytes

    def collect_if_due(self) -> bool:
        """Collect (every generation) once `every_bytes` were stored since the last time; whether it did. Call it
        between batches, when the finished batch's frames are garbage too."""
        if self.pending < self.every_bytes:
            return False
        self.pending = 0
        self.collect()
        return True


__all__ = ["tune_for_batches", "FIRST_GENERATION", "ByteCollector"]
