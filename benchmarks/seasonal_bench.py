"""Seasonal references on the demo stream: calm-hour false alarms, week-4 detection, and the cost of mixing.

Usage: python benchmarks/seasonal_bench.py [--per-day 5000] [--seed 7]
Simulates the demo's four weeks (driftline.simulate, Monday start, drift from day 21), replays them into a
temporary SQLite database, sets references from days 0–13 with seasonality none, hour_of_day, day_of_week and
both, and for each one counts: calm 1-hour windows of days 14–20 (168) calling anything drifted (features,
score or prevalence; alpha is the documented per-report rate), drifted 1-hour windows of days 21–27 (168) and
daily windows of days 21–27 (7) calling amount or country. Prints the time per 1-hour `drift_document` of each
seasonal reference as a ratio to the plain reference's, measured in the same run.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from driftline.cli import main
from driftline.commands.simulate import write_stream
from driftline.config import load
from driftline.ingest.simulate import SimSpec
from driftline.readouts.drift import drift_document
from driftline.readouts.references import list_references
from driftline.readouts.windows import Window
from driftline.storage.store import Store

START = 1_793_577_600.0  # Monday 2026-11-02T00:00:00Z
DAY, HOUR = 86400.0, 3600.0
CONFIG = """model: fraud
features: {amount: numeric, country: categorical, channel: categorical, card_present: categorical,
           merchant_category: categorical, hour: numeric, account_age_days: numeric, tx_count_24h: numeric,
           distance_km: numeric}
"""
SEASONALITIES = ("none", "hour_of_day", "day_of_week", "both")


def _alarm(doc: dict) -> bool:
    return bool(doc["drifted"]) or bool(doc["score"] and doc["score"]["drifted"]) or doc["prevalence"]["drifted"]


def main_bench() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-day", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        cfg_path = f"{d}/driftline.yaml"
        with open(cfg_path, "w") as fh:
            fh.write(CONFIG)
        write_stream(SimSpec(start=START, days=28, per_day=args.per_day, seed=args.seed, drift_day=21.0),
                     START + 28 * DAY, f"{d}/events.jsonl")
        base = ["--config", cfg_path, "--db", f"sqlite:///{d}/demo.db"]
        assert main([*base, "replay", f"{d}/events.jsonl"]) == 0
        for s in SEASONALITIES:
            assert main([*base, "reference", "set", "--from", "2026-11-02T00:00:00Z", "--to",
                         "2026-11-16T00:00:00Z", "--seasonality", s]) == 0
        store, config = Store(f"sqlite:///{d}/demo.db"), load(cfg_path)
        ids = {r.seasonality: r.id for r in list_references(store, "fraud")}
        calm = [Window(START + 14 * DAY + h * HOUR, START + 14 * DAY + (h + 1) * HOUR) for h in range(168)]
        drifted = [Window(START + 21 * DAY + h * HOUR, START + 21 * DAY + (h + 1) * HOUR) for h in range(168)]
        days = [Window(START + k * DAY, START + (k + 1) * DAY) for k in range(21, 28)]
        rows, per_call = [], {}
        for s in SEASONALITIES:
            assert main([*base, "reference", "activate", str(ids[s])]) == 0
            drift_document(store, config, "fraud", calm[0])  # load the reference into the cache
            t0 = time.perf_counter()
            alarms = sum(_alarm(drift_document(store, config, "fraud", w)) for w in calm)
            per_call[s] = (time.perf_counter() - t0) / len(calm)
            hour_flags = sum("hour" in drift_document(store, config, "fraud", w)["drifted"] for w in calm)
            found = sum(bool({"amount", "country"} & set(drift_document(store, config, "fraud", w)["drifted"]))
                        for w in drifted)
            found_days = sum({"amount", "country"} <= set(drift_document(store, config, "fraud", w)["drifted"])
                             for w in days)
            rows.append((s, alarms, hour_flags, found, found_days))
        store.close()
    print(f"demo stream, {args.per_day}/day, seed {args.seed}; alpha {config.drift.alpha} per report "
          f"(expected calm alarms ≤ {config.drift.alpha * 168:.1f} of 168)")
    print(f"{'seasonality':<12} {'calm 1h alarms':>15} {'calm 1h hour':>13} {'drift 1h found':>15} "
          f"{'drift 1d found':>15} {'time vs none':>13}")
    for s, alarms, hour_flags, found, found_days in rows:
        print(f"{s:<12} {alarms:>11}/168 {hour_flags:>9}/168 {found:>11}/168 {found_days:>13}/7 "
              f"{per_call[s] / per_call['none']:>12.2f}×")


if __name__ == "__main__":
    main_bench()
