"""What the per-event bounds (depth, duplicate keys, feature bounds) cost on the happy path of `decode`.

Usage: python benchmarks/decode_bench.py [--per-day N] [--days D]
Decodes simulated events (the CLI's simulator, 8 mixed-type features) three ways in the same run and prints
rates as ratios: `decode` with its checks switched off (the baseline: what decode cost before the bounds),
`decode` as shipped, and msgspec's raw typed decode. Also the share of events that take the duplicate-key
screen's slow path (a full re-parse), which should be 0 for ordinary producers.
"""

from __future__ import annotations

import argparse
import json

import driftline.core.events as events
from driftline.config import Config
from driftline.context import parse_at
from driftline.core.limits import _exact_duplicate, duplicate_key
from driftline.ingest.simulate import SimSpec, stream

from bench_common import best_rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--per-day", type=int, default=20000)
    ap.add_argument("--days", type=float, default=2.0)
    args = ap.parse_args()
    end = parse_at("2026-01-10T00:00:00Z")
    assert end is not None
    spec = SimSpec(start=end - args.days * 86400, days=args.days, per_day=args.per_day, seed=7,
                   model=Config().model)
    lines = [json.dumps(ev, separators=(",", ":")).encode() for ev in stream(spec, end=end)]
    n = len(lines)

    def run() -> None:
        for i, raw in enumerate(lines):
            events.decode(raw, "bench", 0, i)

    shipped = best_rate(n, run, 5)
    saved = events.too_deep, events.duplicate_key, events.feature_problem
    events.too_deep, events.duplicate_key, events.feature_problem = (  # type: ignore[assignment]
        lambda raw, depth: None, lambda raw: None, lambda feats, limits: None)
    try:
        unchecked = best_rate(n, run, 5)
    finally:
        events.too_deep, events.duplicate_key, events.feature_problem = saved
    raw_rate = best_rate(n, lambda: [events._tagged_dec.decode(raw) for raw in lines], 5)
    slow = 0
    original = _exact_duplicate
    import driftline.core.limits as limits

    def counting(raw: bytes) -> str | None:
        nonlocal slow
        slow += 1
        return original(raw)

    limits._exact_duplicate = counting  # type: ignore[assignment]
    try:
        for raw in lines:
            duplicate_key(raw)
    finally:
        limits._exact_duplicate = original  # type: ignore[assignment]
    print(f"{n:,} simulated events, {sum(map(len, lines)) / n:.0f} bytes each on average")
    print(f"decode with the bounds / without them: {shipped / unchecked:.2f}  "
          f"(without: {unchecked / raw_rate:.2f} of msgspec's raw typed decode, with: {shipped / raw_rate:.2f})")
    print(f"events taking the duplicate-key slow path: {slow / n:.2%}")


if __name__ == "__main__":
    main()
