"""Scrape cost of /metrics with junk label values (issue 13.3): clean traffic, then 10,000 junk variants, 10,000 junk
model versions and 300 junk model names (600 events) replayed on top; series, bytes and scrape time before/after.

Usage: python benchmarks/cardinality_bench.py [--per-day 300] [--junk 10000] [--repeats 5] [--unbounded]
Each scrape rebuilds the snapshot from the database (cache off) and renders the text exposition, as /metrics
does. Prints the median scrape time with the junk as a ratio of the clean baseline measured in the same run, the
series counts against the documented bound (driftline.exporter.bounds). `--unbounded` repeats the junk run with
every limit at its maximum (10,000), close to the behaviour before the limits.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from driftline.config import Config, from_dict
from driftline.exporter.bounds import series_bound
from driftline.exporter.http import build_registry
from driftline.exporter.collector import SnapshotCollector
from driftline.ingest.pipeline import Pipeline
from driftline.ingest.replay import replay
from driftline.ingest.simulate import SimSpec, stream
from driftline.ops import OpsMetrics
from driftline.storage.store import Store
from driftline.triggers.drift_hook import default_provider

END = 1_795_996_800.0  # 2026-11-30T00:00:00Z
EXAMPLE = Path(__file__).resolve().parents[1] / "driftline.example.yaml"
_enc = msgspec.json.Encoder()


def _pred(i: int, model: str = "fraud", variant: str = "A", version: str = "v1") -> bytes:
    return _enc.encode({"type": "prediction", "prediction_id": f"j-{model}-{variant}-{version}-{i}", "model": model,
                        "variant": variant, "model_version": version, "ts": END - 3600 - (i % 50) * 60,
                        "score": (i % 97) / 97})


def scrape(store: Store, config: Config, repeats: int) -> tuple[float, int, int]:
    """(median seconds per scrape, series, bytes) of the exporter's registry over this store."""
    snap = SnapshotCollector(store, config, lambda: END, drift=default_provider(), cache_s=0.0)
    registry = build_registry(snap, OpsMetrics())
    times, body = [], b""
    for _ in range(repeats):
        t0 = time.perf_counter()
        body = generate_latest(registry)
        times.append(time.perf_counter() - t0)
    series = sum(len(f.samples) for f in text_string_to_metric_families(body.decode()))
    return statistics.median(times), series, len(body)


def run(config: Config, workdir: Path, name: str, per_day: int, junk: int, repeats: int) -> dict[str, Any]:
    store = Store(f"sqlite:///{workdir / name}.db", clock=lambda: END)
    store.migrate()
    pipeline = Pipeline(config, store, clock=lambda: END)
    clean = workdir / f"{name}-clean.jsonl"
    spec = SimSpec(start=END - 10 * 86400, days=10, per_day=per_day, drift_day=5, seed=3)
    clean.write_bytes(b"\n".join(_enc.encode(e) for e in stream(spec, end=END)) + b"\n")
    replay(pipeline, str(clean))
    before = scrape(store, config, repeats)
    dirty = workdir / f"{name}-junk.jsonl"
    lines = [_pred(i, variant=f"junk-{i}") for i in range(junk)] + [_pred(i, version=f"build-{i}")
                                                                    for i in range(junk)]
    lines += [_pred(i, model=f"m-{i % 300}") for i in range(600)]
    dirty.write_bytes(b"\n".join(lines) + b"\n")
    replay(pipeline, str(dirty))
    after = scrape(store, config, repeats)
    store.close()
    return {"before": before, "after": after, "bound": series_bound(config)}


def full(config: Config, workdir: Path, repeats: int, per_pair: int = 20) -> tuple[float, int, int]:
    """Scrape of a database that fills every limit: each admitted model with every admitted (variant, version)
    pair and their overflow, predictions and outcomes (the worst case the bound describes)."""
    store = Store(f"sqlite:///{workdir / 'full'}.db", clock=lambda: END)
    store.migrate()
    lim = config.limits
    lines = []
    for m in range(lim.max_models):
        for v in range(lim.max_variants_per_model + 1):
            for r in range(lim.max_versions_per_model + 1):
                for i in range(per_pair):
                    raw = _pred(i, model=f"m{m}", variant=f"v{v}", version=f"r{r}")
                    pid = msgspec.json.decode(raw)["prediction_id"]
                    lines += [raw, _enc.encode({"type": "outcome", "prediction_id": pid, "label": i % 2,
                                                "ts": END - 60})]
    path = workdir / "full.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    replay(Pipeline(config, store, clock=lambda: END), str(path))
    out = scrape(store, config, repeats)
    store.close()
    return out


def report(title: str, r: dict[str, Any]) -> None:
    (t0, s0, b0), (t1, s1, b1) = r["before"], r["after"]
    print(f"{title}")
    print(f"  clean : {s0:>8,} series {b0 / 1e6:7.2f} MB  scrape {t0 * 1000:9.1f} ms")
    print(f"  junk  : {s1:>8,} series {b1 / 1e6:7.2f} MB  scrape {t1 * 1000:9.1f} ms")
    print(f"  scrape time junk/clean = {t1 / t0:.2f}x   series junk/clean = {s1 / s0:.2f}x   "
          f"documented bound {r['bound']:,} ({'within' if s1 <= r['bound'] else 'EXCEEDED'})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-day", type=int, default=300)
    ap.add_argument("--junk", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--unbounded", action="store_true", help="also run with every limit at 10,000")
    args = ap.parse_args()
    import yaml

    data = yaml.safe_load(EXAMPLE.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        config = from_dict(data)
        r = run(config, work, "bounded", args.per_day, args.junk, args.repeats)
        report("default limits (driftline.example.yaml)", r)
        t2, s2, b2 = full(config, work, args.repeats)
        print(f"  full  : {s2:>8,} series {b2 / 1e6:7.2f} MB  scrape {t2 * 1000:9.1f} ms   (every limit filled; "
              f"scrape time full/clean = {t2 / r['before'][0]:.2f}x)")
        if args.unbounded:
            wide = dict(data, limits={"max_models": 10_000, "max_variants_per_model": 10_000,
                                      "max_versions_per_model": 10_000})
            report("limits at 10,000 (about the behaviour before the limits)",
                   run(from_dict(wide), work, "unbounded", args.per_day, args.junk, 1))


if __name__ == "__main__":
    main()
