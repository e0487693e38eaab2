"""`driftline replay` and `driftline dead-letters`: feed files through the pipeline, inspect rejects."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from rich.cells import cell_len
from rich.text import Text

from ..config import ConfigError
from ..context import Context, positive
from ..core.engine import CONFLICTING, IMPLICIT_RELABELLED
from ..core.events import ALL_REASONS, RAW_LIMIT, iso
from ..ingest.pipeline import FILE_PREFIX, BatchResult, Pipeline
from ..ingest.replay import BATCH, replay, resume_point
from ..ingest.stored_now import KeyLog
from ..numbers import count, counted, were
from ..storage import dead_letter_rows
from ..storage.errors import StoreUnavailable
from ..terminal import preview, visible
from .feature_notes import untracked_warnings
from .progress import IngestProgress, Ramp
from .prose import say
from .render import shown, shown_name
from .replay_warnings import (conflict_warning, expired_warning, past_horizon_warning, shared_id_warnings,
                              shared_model_warning)
from .tables import Col, print_table
from .which_model import closest


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="ingest JSON-lines events from a file or '-' (stdin)")
    p.add_argument("path", help="JSON-lines file, or - for stdin")
    p.add_argument("--batch-size", type=positive(int), default=BATCH,
                   help=f"events per transaction (default {BATCH})")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_replay)
    d = sub.add_parser("dead-letters", help="list rejected events with their reasons")
    d.add_argument("--limit", type=positive(int), default=None,
                   help="how many of the latest to list (default 20); with --raw: write at most N payloads, the "
                        "oldest N (default all)")
    d.add_argument("--reason", metavar="REASON",
                   help=f"only this reason, one of: {', '.join(ALL_REASONS)} (see README, Dead letters)")
    d.add_argument("--json", action="store_true", help="print the totals and the latest dead letters as JSON (not "
                                                       "with --raw)")
    d.add_argument("--raw", action="store_true",
                   help="print the stored payloads of --reason's dead letters, oldest first, one per line, to feed "
                        "them again once the cause is fixed: `dead-letters --reason model_limit --model M --raw | "
                        "driftline replay -`")
    d.add_argument("--model", metavar="MODEL", help="with --raw: only payloads whose `model` is MODEL")
    d.set_defaults(func=cmd_dead_letters)


def run_replay(ctx: Context, path: str, batch_size: int = BATCH, progress: bool | None = None,
               monotonic: Callable[[], float] = time.monotonic) -> dict[str, object]:
    """Replay a file and run maintenance; returns the summary document. `progress`: show a progress bar on ctx.err
    (default: when both stdout and stderr are terminals); `monotonic` times it."""
    pipeline = Pipeline(ctx.config, ctx.store(), clock=ctx.clock, keep_model=ctx.model_named)
    pipeline.stored_now = KeyLog()  # tells the predictions this replay stored from older ones (expired_warning)
    newest_before = pipeline.watermark()
    start, why = resume_point(pipeline, path)
    if why:
        say(ctx.err, shown(why), "[yellow]note:[/yellow] ")
    show = (ctx.err.is_terminal and ctx.console.is_terminal) if progress is None else progress
    size = os.path.getsize(path) if path != "-" else None
    if show:
        with IngestProgress(ctx.err, "replay", size or None, monotonic) as bar:
            def on_batch(res: BatchResult, pos: int) -> None:
                bar.add(res)
                bar.update(pos)

            total = replay(pipeline, path, on_batch, Ramp(batch_size).next_size, start, rewind=why is not None,
                           tick=bar.tick)
    else:
        total = replay(pipeline, path, None, batch_size, start, rewind=why is not None)
    maintenance = pipeline.maintain()
    if total.restarted:
        say(ctx.err, shown(total.restarted), "[yellow]note:[/yellow] ")
    elif start and not why and not (total.unreadable and total.records == 0):  # a cut copy ending before `start`
        say(ctx.err, f"{shown(path)} was replayed before up to line {start:,}: resumed at line {start + 1:,} "
                     "(`records` counts the lines read from there)", "[yellow]note:[/yellow] ")
    if total.held_back is not None:
        say(ctx.err, f"line {total.held_back + 1:,} has no newline and is not valid JSON yet "
                     "(is the file still being written?): left for the next replay, not dead-lettered",
            "[yellow]note:[/yellow] ")
    warnings = [w for w in (past_horizon_warning(total, newest_before, ctx.config.labels.horizon),
                            expired_warning(maintenance, pipeline.watermark(), ctx.config.labels.horizon,
                                            pipeline.stored_now.full, in_order=not total.behind),
                            conflict_warning(total), shared_model_warning(total.counters)) if w] + shared_id_warnings(ctx.config.ab, total.counters) \
        + untracked_warnings(total.counters,
                                                                               ctx.config.max_features)
    for w in warnings:
        say(ctx.err, shown(w), "[yellow]warning:[/yellow] ")  # (the conflict warning quotes an event's id)
    return {**summary(total, maintenance), "held_back_line": total.held_back, "warnings": warnings,
            "error": total.unreadable}


def summary(total: BatchResult, maintenance: Counter[tuple[str, str]]) -> dict[str, object]:
    """A replay's counts. `predictions` and `outcomes` are the ones stored; copies of a stored event (and outcomes
    older than the one in force) are counted apart, so a file replayed twice over does not read as twice the data
    (user tryout: `cat f f | driftline replay -` showed twice the predictions the database held)."""
    c = total.counters
    dup_preds, dup_outs = c.get(("duplicates", "prediction"), 0), c.get(("duplicates", "outcome"), 0)
    stale = c.get(("stale_outcomes", ""), 0)
    return {
        "records": total.records,
        "accepted": total.accepted,
        "dead_lettered": total.dead,
        "duplicates": total.duplicates,
        "already_stored": total.already_stored,
        "predictions": c.get(("events", "prediction"), 0) - dup_preds,
        "duplicate_predictions": dup_preds,
        "conflicting_duplicates": c.get(CONFLICTING, 0),
        "outcomes": c.get(("events", "outcome"), 0) - dup_outs - stale,
        "duplicate_outcomes": dup_outs,
        "corrections": c.get(("corrections", ""), 0),
        "implicit_relabelled_positive": c.get((IMPLICIT_RELABELLED, "positive"), 0),
        "implicit_relabelled_negative": c.get((IMPLICIT_RELABELLED, "negative"), 0),
        "stale_outcomes": stale,
        "outcome_before_prediction": c.get(("outcome_before_prediction", ""), 0),
        "implicit_negatives": maintenance.get(("implicit_negatives", ""), 0),
        "expired_predictions": maintenance.get(("expired_predictions", ""), 0),
        "expired_outcomes": maintenance.get(("expired_outcomes", ""), 0),
        "folded_into_other": total.folded,
    }


ROW_NAMES = {"predictions": "predictions stored", "outcomes": "outcomes stored",
             "conflicting_duplicates": "of which conflicting (another score, ts, version or flag)",
             "corrections": "corrections (explicit label changed)",
             "implicit_relabelled_positive": "implicit negatives turned positive",
             "implicit_relabelled_negative": "implicit negatives confirmed"}
"""Terminal names of the summary rows whose JSON key alone would not say what they count (user tryouts: predictions
counted the duplicate copies too; 'corrections 0' read as no label changed while implicit negatives were
overturned by a later positive outcome)."""


def cmd_replay(ctx: Context, args: argparse.Namespace) -> int:
    if args.path != "-":
        problem = _unreadable(args.path)
        if problem:
            ctx.err.print(f"[red]error:[/red] {shown(problem)}", soft_wrap=True)
            return 2
    try:
        doc = run_replay(ctx, args.path, args.batch_size, progress=False if args.json else None)
    except StoreUnavailable as err:  # SRE tryout: `--json` printed nothing on stdout when the database went away
        if args.json:  # the counts of the batches stored before it, the error in the document, then the usual line
            print(json.dumps({**summary(err.stored or BatchResult(), Counter()),
                              "held_back_line": None, "warnings": [], "error": f"database unavailable: {err}"}))
        raise
    if doc["error"]:  # a truncated compressed file: the summary of what was read, then the error (exit 2)
        ctx.err.print(f"[red]error:[/red] {shown(doc['error'])}", soft_wrap=True)
    if args.json:
        print(json.dumps(doc))
        return 2 if doc["error"] else 0
    counts = {k: v for k, v in doc.items() if isinstance(v, int) and k != "held_back_line"}  # a 0-based line index,
    # not a count: it showed as "held back line 3" under the note "line 4 has no newline ...", which tells it
    print_table(ctx.console, [Col("", "left"), Col("")],
                [[ROW_NAMES.get(k, k.replace("_", " ")), count(v)] for k, v in counts.items()],
                title=f"replay {shown(args.path)}", show_header=False)
    if doc["dead_lettered"]:
        ctx.console.print("[yellow]some events were dead-lettered: `driftline dead-letters` shows why[/yellow]")
    if doc["implicit_relabelled_positive"]:
        n = doc["implicit_relabelled_positive"]
        ctx.console.print(f"[yellow]{counted(n, 'prediction')} counted as implicit "
                          "negatives (no outcome within labels.implicit_negative_after) got a positive outcome "
                          f"later: {'its count' if n == 1 else 'their counts'} moved from negative to positive "
                          "(not counted as corrections)[/yellow]")
    if doc["folded_into_other"]:
        n = doc["folded_into_other"]
        ctx.console.print(f"[yellow]{counted(n, 'event')} of this replay had a new variant or "
                          f"model_version beyond `limits:` and {were(n)} counted under __other__ (all-time totals: "
                          "`driftline metrics`, driftline_label_overflow_total)[/yellow]")
    if doc["outcome_before_prediction"]:
        n = doc["outcome_before_prediction"]
        their = (("its", "its label counts, its delay is") if n == 1
                 else ("their", "their labels count, their delays are"))
        ctx.console.print(f"[yellow]{counted(n, 'outcome')} {were(n)} stamped before {their[0]} "
                          f"prediction: {their[1]} left out of the label-delay quantiles "
                          "(check the producers' clocks or what their `ts` holds)[/yellow]")
    return 2 if doc["error"] else 0


def _unreadable(path: str) -> str | None:
    """Why `path` cannot be replayed, or None when it is a readable file."""
    if not os.path.exists(path):
        return f"no such file: {path}"
    if os.path.isdir(path):
        return f"not a file: {path} is a directory"
    if not os.path.isfile(path):  # a pipe is read once, but a replayed file's position is stored to resume it
        return f"not a regular file: {path} (a pipe or process substitution is read from standard input: " \
               "`driftline replay - < …` or `… | driftline replay -`)"
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as err:
        return f"cannot read {path}: {err.strerror}"
    return _config_not_events(path, head)


def _config_not_events(path: str, head: bytes) -> str | None:
    """Why a .yaml/.yml file whose first setting line is no JSON object is not replayed (tryout: `driftline replay
    driftline.yaml`, arguments swapped, stored each of its 136 lines as an invalid_json dead letter)."""
    if not path.lower().endswith((".yaml", ".yml")):
        return None
    lines = head.decode("utf-8", "replace").splitlines()
    first = next((line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")), "")
    if not first or first.startswith("{"):
        return None
    return (f"{path} looks like a YAML settings file, not events (one JSON object a line): nothing replayed; a "
            f"config goes to --config (`driftline --config {path} …`)")


def cmd_dead_letters(ctx: Context, args: argparse.Namespace) -> int:
    if args.reason is not None and args.reason not in ALL_REASONS:
        raise ConfigError(f"--reason: unknown reason {args.reason!r}; one of: {', '.join(ALL_REASONS)}")
    if args.raw:
        if args.json:  # hostile-user tryout: --raw ignored --json silently
            raise ConfigError("--json: not with --raw, which writes the stored payloads as they are, one per line, "
                              "for `driftline replay -` (without --raw, --json gives them as text in `recent`)")
        return raw_payloads(ctx, args.reason, args.model, args.limit)
    if args.model is not None:
        raise ConfigError("--model: only with --raw (the listing shows every model)")
    store = ctx.store()
    rows = store.dead_letters(args.limit or 20, args.reason)
    totals = {lbl: v for (n, lbl), v in store.counters().items() if n == "dead_letters"}
    if args.json:
        print(json.dumps({"totals": totals, "recent": [_letter_json(r) for r in rows]}))
        return 0
    if not rows and not any(totals.values()):
        ctx.console.print("no dead letters" + (f" with reason {args.reason}" if args.reason else "")
                          + " stored (all time)")
        return 0
    print_table(ctx.console, [Col("reason", "left"), Col("count")],
                [[shown(reason), count(n)] for reason, n in sorted(totals.items(), key=lambda kv: -kv[1])],
                title="by reason (all time)")
    if not rows:
        ctx.console.print(f"no dead letters with reason {args.reason} stored (all time)")
        return 0
    # detail is free text: it shrinks (cut with … in its cell) before received or source are left out
    cols = [Col("received", "left", drop=3), Col("reason", "left"), Col("source", "left", drop=2),
            Col("where", "left"), Col("detail", "left", drop=1, flex=24)]
    out, payloads = [], []
    for row in rows:
        raw = row["raw"].decode("utf-8", "replace")
        src, at = shown(short_source(row["source"])), where(row["source"], row["partition"], row["offset"])
        out.append([iso(float(int(row["received_at"]))), shown(row["reason"]), src, at, shown(row["detail"])])
        payloads.append((f"  {visible(short_source(row['source']))} {at}: ", raw))
    filt = f" with reason {args.reason}" if args.reason else ""
    print_table(ctx.console, cols, out, title=f"latest {len(rows)}{filt}, newest first")
    ctx.console.print("raw payloads, newest first (cut to the width; --json for all):")
    for head, raw in payloads:  # one line each: the preview is cut to the console (escapes counted as shown)
        ctx.console.print(Text(head + preview(raw, max(ctx.console.width - cell_len(head), 12))), soft_wrap=True)
    for src in sorted({row["source"] for row in rows} - {"stdin"}):  # a path whole, as running text
        if short_source(src) != src:
            say(ctx.console, f"[dim]source {shown(short_source(src))} is {shown(src)}[/dim]")
    return 0


def raw_payloads(ctx: Context, reason: str | None, model: str | None, limit: int | None = None) -> int:
    """Print the stored payloads of one reason's dead letters, oldest first, one per line (on stdout, nothing else
    there), to be fed again once their cause is fixed (a model refused by limits.max_models before `models forget`
    freed a slot: SRE tryout). Payloads cut at the stored size are left out and counted on stderr: fed again they
    would only be dead-lettered invalid_json. `limit`: at most that many written (the oldest); the ones past it are
    counted on stderr (hostile-user tryout: --limit was ignored silently)."""
    if reason is None:
        raise ConfigError("--raw: give --reason (feeding every kind of dead letter again would refuse most of them "
                          "again, counting them twice)")
    wanted = None if model is None else model.encode()
    written = cut = other = beyond = 0
    others: Counter[bytes | None] = Counter()
    out = sys.stdout.buffer
    for raw in dead_letter_rows.payloads(ctx.store(), reason):
        if len(raw) >= RAW_LIMIT:
            cut += 1
            continue
        if wanted is not None and (seen := _payload_model(raw)) != wanted:
            other += 1
            others[seen] += 1
            continue
        if limit is not None and written >= limit:
            beyond += 1
            continue
        out.write(raw.rstrip(b"\r\n").replace(b"\n", b" ") + b"\n")
        written += 1
    out.flush()
    notes = [f"{counted(written, 'payload')} of reason {reason} written"]
    if other:
        notes.append(f"{count(other)} of another model left out")
    if other and not written:  # final tryout: a mistyped --model piped nothing into replay, silently
        names = [m.decode() for m in others if m is not None]
        near = closest(model or "", names)
        listed = ", ".join(f"'{shown(m.decode())}' ({count(k)})" for m, k in others.most_common(5) if m is not None)
        notes.append(f"none is of model '{shown(model)}'" + (f" (did you mean {shown_name(near)}?)" if near else "")
                     + (f"; these payloads name {listed}" if listed else ""))
    if beyond:
        notes.append(f"{count(beyond)} more left out by --limit {limit:,} (an event fed again twice is stored once: "
                     "run without --limit for the rest)")
    if cut:
        notes.append(f"{count(cut)} left out: stored cut at {RAW_LIMIT:,} bytes, the whole event is not kept")
    say(ctx.err, "; ".join(notes) + (". Their dead letters stay listed and counted: feeding them again adds the "
                                     "events, it does not take the refusals back." if written else "."))
    return 0


def _payload_model(raw: bytes) -> bytes | None:
    """The `model` of a payload (None when it is not a JSON object with a text model)."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    value = doc.get("model") if isinstance(doc, dict) else None
    return value.encode() if isinstance(value, str) else None


def _letter_json(row: dict[str, Any]) -> dict[str, Any]:
    """A stored dead letter as `--json` shows it: raw as text, and `received_at_iso` (ISO 8601 UTC, as the other JSON
    documents give times) next to the epoch-seconds `received_at` that scripts already read."""
    out = {k: (v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for k, v in row.items()}
    out["received_at_iso"] = iso(float(int(row["received_at"])))
    return out


def short_source(source: str) -> str:
    """A file source's file name ('e.jsonl' for 'file:/x/e.jsonl'); stdin and Kafka topics as they are."""
    return os.path.basename(source[len(FILE_PREFIX):]) if source.startswith(FILE_PREFIX) else source


def where(source: str, partition: int, offset: int) -> str:
    """Where a dead letter came from, as its reader counts: 'line 977' (1-based) for a file or stdin, 'partition 2
    offset 1,234' for Kafka (offsets stay offsets)."""
    if source.startswith(FILE_PREFIX) or source == "stdin":
        return f"line {offset + 1:,}"
    return f"partition {partition} offset {offset:,}"
