"""The process's garbage-collector settings, set once at start-up by the CLI (the composition root).

Ingestion allocates a few container objects per event (join records, rows, feature dicts); with CPython's default
first-generation threshold (700) a replay ran ~900 collections that cost ~15 % of its CPU, each one re-scanning the
survivors of the batch being built. Reference counting frees nearly all of it anyway; the collector is only there
for cycles, so it runs 100× less often here. Memory cost: at most FIRST_GENERATION young objects wait for a
collection (a few MB).
"""

from __future__ import annotations

import gc

FIRST_GENERATION = 70_000
"""Allocations (net of deallocations) of tracked objects between first-generation collections (CPython: 700)."""
OLDER_GENERATIONS = (20, 20)
"""First-generation collections per second-generation one, and those per full collection (CPython: 10, 10)."""


def tune_for_batches() -> None:
    """Collect 100× less often (see the module docstring). Nothing is frozen: in a process that calls the CLI many
    times (tests, notebooks) freezing would keep every cycle alive at that moment for good."""
    gc.set_threshold(FIRST_GENERATION, *OLDER_GENERATIONS)


__all__ = ["tune_for_batches", "FIRST_GENERATION"]
