"""`driftline simulate`: write the simulated fraud stream as JSON lines (file or stdout), or produce it to Kafka."""

from __future__ import annotations

import argparse
import sys

import msgspec

from ..context import Context, fraction, number_type, parse_at, positive, seed_number
from ..durations import MAX_WINDOW_DAYS
from ..ingest.simulate import SimSpec, stream
from ..numbers import counted


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="simulated fraud stream (2 %% fraud, delayed labels, A/B, drift)")
    add_sim_args(p)
    p.add_argument("--out", default="-", help="output file (default: stdout)")
    p.add_argument("--kafka", metavar="BOOTSTRAP",
                   help="produce to the predictions/outcomes topics instead of --out (keyed by prediction_id); "
                        "--rate alone also produces, to DRIFTLINE_KAFKA_BOOTSTRAP or config kafka.bootstrap")
    p.add_argument("--rate", type=positive(float), help="with --kafka: events per second of wall time (default: as fast as "
                                              "possible); event times still come from the simulation")
    p.set_defaults(func=cmd_simulate)


def add_sim_args(p: argparse.ArgumentParser, end_help: str = "end of the simulated span (RFC 3339; default now)"
                 ) -> None:
    """The stream's options, shared by simulate and demo; `end_help` says what --end defaults to in the command."""
    p.add_argument("--days", type=SIM_DAYS, default=28.0, help="days of traffic (default 28; at most 36525)")
    p.add_argument("--per-day", type=positive(int), default=5000, help="predictions per day (default 5000)")
    p.add_argument("--drift-day", type=DRIFT_DAY, default=21.0, help="day the drift starts; negative for none")
    p.add_argument("--seed", type=seed_number, default=7,
                   help="random seed: the same seed gives the same stream (default 7); prediction ids are tx-N for "
                        "seed 7, tx-sSEED-N for others")
    p.add_argument("--end", help=end_help)
    p.add_argument("--prevalence", type=fraction, default=0.02, help="share of frauds (default 0.02)")



SIM_DAYS = number_type(float, lambda v: 0 < v <= MAX_WINDOW_DAYS,
                       f"must be more than 0 and at most {MAX_WINDOW_DAYS} (100 years), got {{text}}")
"""--days: `1e9` ended in 'unexpected ValueError: year -2735881 is out of range', `inf` in an OverflowError."""
DRIFT_DAY = number_type(float, lambda v: v == v and abs(v) != float("inf"), "must be a finite number of days, got {text}")
"""--drift-day: `nan` was taken and simulated no drift, silently."""

def spec_from(ctx: Context, args: argparse.Namespace) -> tuple[SimSpec, float]:
    end = parse_at(args.end, "--end") if args.end else ctx.clock()
    end = float(int(end // 3600) * 3600)
    drift = None if args.drift_day is None or args.drift_day < 0 else args.drift_day
    spec = SimSpec(start=end - args.days * 86400.0, days=args.days, per_day=args.per_day, drift_day=drift,
                   seed=args.seed, model=ctx.config.model, prevalence=args.prevalence)
    return spec, end


def write_stream(spec: SimSpec, end: float, out: str) -> int:
    """Write events up to `end`; returns how many."""
    enc = msgspec.json.Encoder()
    n = 0
    fh = sys.stdout.buffer if out == "-" else open(out, "wb")
    try:
        buf = bytearray()
        for ev in stream(spec, end=end):
            enc.encode_into(ev, buf, len(buf))
            buf += b"\n"
            n += 1
            if len(buf) > 1 << 20:
                fh.write(buf)
                buf.clear()
        fh.write(buf)
    finally:
        if out != "-":
            fh.close()
        else:
            fh.flush()
    return n


def cmd_simulate(ctx: Context, args: argparse.Namespace) -> int:
    spec, end = spec_from(ctx, args)
    if args.kafka or args.rate is not None:
        from .kafka_cmds import simulate_to_kafka

        return simulate_to_kafka(ctx, args, spec, end)
    n = write_stream(spec, end, args.out)
    if args.out != "-":
        ctx.err.print(f"wrote {counted(n, 'event')} to {args.out}")
    return 0
