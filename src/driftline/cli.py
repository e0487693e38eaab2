"""The `driftline` command line: global --config/--db options and the subcommands."""

from __future__ import annotations

import argparse
import importlib
import io
import logging
import os
import sys
import typing
from typing import Any

from rich.console import Console
from rich.markup import escape

from . import __version__
from .commands.existing_db import reads_only
from .cli_hints import choice_hint, option_hint
from .config import ConfigError, load_named
from .context import Context, resolve_db
from .gc_tuning import tune_for_batches
from .malloc_arenas import cap_malloc_arenas
from .storage.errors import MigrationFailed, NotADatabase, SchemaTooNew, StoreUnavailable
from .storage.pgread import quiet_pipeline_exit_echo
from .terminal import LOG_FORMAT, VisibleFormatter, visible

COMMANDS = ("ingest", "query", "simulate", "demo", "alerts", "serve", "ab", "drift_cmds", "report", "kafka_cmds",
            "models_cmds", "compact_cmd", "config_cmd")
"""Modules of driftline.commands, each registering its subcommands."""


DESCRIPTION = """\
driftline watches a deployed binary classifier: it joins predictions with their
delayed labels and reports recall, FPR, precision, alert rate, calibration and
input drift over time windows (every rate with a 95 % interval and its count),
compares model variants (A/B, shadow), fires pre-agreed triggers and writes a
weekly report.

commands by task:
  feed events    replay (files, stdin), run (Kafka: the live service),
                 simulate, demo
  read results   metrics, drift, calibration, slices, ab, dead-letters
  references     reference set | list | show | activate
  alerts         alerts (states, history), alerts evaluate,
                 alerts validate, alerts render
  serve, report  serve (exporter over a database), report (weekly report)
  upkeep         compact (old history to day rows now; serve does it daily)
  config         config check (validate --config: no database, no Kafka)
  Kafka topics   topics create | check
  label slots    models list | forget (free a slot a junk model name holds)"""

EPILOG = """\
Start with `driftline demo`; `driftline COMMAND --help` lists a command's
options. Documentation: README.md (Quick start, CLI, "Reading the output")
and docs/ in the source tree."""


class Parser(argparse.ArgumentParser):
    """argparse, except that a bad option value (`--limit 0`, `--port 70000`, `--limit` without a value) ends with
    one line `error: --limit: must be greater than 0, got 0` like every other check, not usage plus a second line;
    a usage mistake (unknown option, unknown or missing command or argument) still shows the usage. A positional
    argument's value its type refuses (`reference activate 2.5`) is one line too (`error: id: ...`). Subparsers
    are of this class too (add_subparsers uses the parent's class)."""

    def error(self, message: str) -> typing.NoReturn:
        if message.startswith("argument -") or (message.startswith("argument ") and "invalid choice" not in message):
            # ArgumentError of an option or a typed positional: "argument --limit: <why>"; a command unknown is
            # "argument COMMAND: invalid choice: ...", a usage mistake
            fail(ReaderConsole(stderr=True, highlight=False), message.removeprefix("argument "))
            self.exit(2)
        hint = choice_hint(message)  # `metrcs`: the closest command rather than the list of all
        if (not hint and message.startswith(("unrecognized arguments", "argument COMMAND: invalid choice"))
                and self.argv is not None):  # `--windw 7d`, and `--confg c.yaml metrics` (c.yaml taken for the command)
            hint = option_hint(self, self.argv)
        super().error(message + hint)

    argv: list[str] | None = None
    """The arguments being parsed (set by parse_args of the program's parser), for option_hint."""

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        self.argv = list(sys.argv[1:] if args is None else args)
        return super().parse_args(args, namespace)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="driftline", description=DESCRIPTION, epilog=EPILOG,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=None,
                        help="YAML config (env DRIFTLINE_CONFIG; default: built-in defaults, domain-neutral, no costs)")
    parser.add_argument("--db", default=None,
                        help="database URL (env DRIFTLINE_DB; default sqlite:///driftline.db)")
    parser.add_argument("--log-level", default=None, metavar="LEVEL",
                        help="log detail: debug, info, warning, error or critical, any case (env DRIFTLINE_LOG_LEVEL; "
                             "default warning; debug adds tracebacks to errors)")
    parser.add_argument("--version", action="version", version=f"driftline {__version__}")
    # help=SUPPRESS: the grouped list in DESCRIPTION is the one list of commands; argparse's own (another order,
    # every command again) would repeat it under "positional arguments"
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help=argparse.SUPPRESS)
    for name in COMMANDS:
        importlib.import_module(f"driftline.commands.{name}").register(sub)
    return parser


def from_env(given: str | None, option: str, variable: str) -> tuple[str | None, str]:
    """A global option's value and where it came from: the option when given, else the environment variable (as
    `env NAME`; set but empty counts as unset, as for DRIFTLINE_DB), else None. Errors name the source."""
    if given is not None:
        return given, option
    return os.environ.get(variable) or None, f"env {variable}"


def log_level(text: str) -> int | None:
    """The logging level named by --log-level (any case), or None when there is no such level."""
    level = logging.getLevelNamesMapping().get(text.strip().upper())
    return level if level is not None and text.strip() else None


def fail(err: Console, message: str) -> None:
    """One line `error: ...` on stderr: control characters escaped, rich markup shown as written, never wrapped."""
    err.print(f"[red]error:[/red] {escape(visible(message))}", soft_wrap=True)


def negative_values(argv: list[str]) -> list[str]:
    """`--window -7d` as `--window=-7d`: argparse takes a value starting with '-' and a digit for an option and
    prints its usage; joined, the option's own check names the problem ("--window: invalid duration '-7d'")."""
    out: list[str] = []
    for token in argv:
        if (out and out[-1].startswith("--") and "=" not in out[-1] and len(token) > 1 and token[0] == "-"
                and token[1].isdigit() and not token[1:].replace(".", "", 1).isdigit()):
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


GLOBAL_OPTIONS = ("--config", "--db", "--log-level")
"""Options of `driftline` itself (no command defines them), accepted after the command too."""


def globals_first(argv: list[str]) -> list[str]:
    """`driftline metrics --config c.yaml` as `driftline --config c.yaml metrics`: argparse only takes the
    program's own options before the command and would refuse them after it ("unrecognized arguments")."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        name = token.split("=", 1)[0]
        if token == "--":
            rest += argv[i:]
            break
        if name in GLOBAL_OPTIONS:
            take = 1 if "=" in token else 2
            front += argv[i:i + take]
            i += take
            continue
        rest.append(token)
        i += 1
    return front + rest


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit code. A reader that goes away (`driftline metrics | head -1`) ends it quietly
    with 0: the output it read was whole lines, and the interpreter's last flush would fail again otherwise."""
    for name in ("stdout", "stderr"):  # started with it closed (`>&-`): Python sets it to None, and the first
        if getattr(sys, name) is None:  # print was a traceback; like a reader gone away, the output goes nowhere
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - for the process's life
        stream = getattr(sys, name)
        if getattr(stream, "errors", None) in ("strict", "surrogateescape") and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")  # a Latin-1 or ASCII terminal shows a name it cannot
            # encode as \u6b3a, as errors show escaped names, instead of ending in "unexpected UnicodeEncodeError"
    cap_malloc_arenas(os.environ)  # before any thread starts (scrapes are answered on threads of their own)
    try:
        code = _main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    try:
        sys.stderr.flush()
    except BrokenPipeError:
        _quiet(sys.stderr)
    return code


class ReaderConsole(Console):
    """rich's Console, except that a reader going away does not end the command with rich's own SystemExit(1)
    (which made `driftline metrics | head -1` fail under `set -o pipefail`): on stdout it raises BrokenPipeError
    (main ends with 0: the reader has what it wanted); on stderr the console goes quiet and the command keeps its
    own exit code (an error nobody can read is still an error)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        if self.stderr:
            _quiet(sys.stderr)
            return
        raise BrokenPipeError


def _quiet_stdout() -> None:
    """Point stdout and stderr at /dev/null so nothing more is written to a closed pipe (Python's own advice;
    `2>&1 | head -1` closes both)."""
    _quiet(sys.stdout)
    _quiet(sys.stderr)


def _quiet(stream: Any) -> None:
    """Point one standard stream's file descriptor at /dev/null."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # not a real file (captured output)
        pass


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(negative_values(globals_first(sys.argv[1:] if argv is None else argv)))
    err = ReaderConsole(stderr=True, highlight=False)
    level_text, level_source = from_env(args.log_level, "--log-level", "DRIFTLINE_LOG_LEVEL")
    level = log_level(level_text or "WARNING")
    if level is None:
        fail(err, f"{level_source}: unknown level {level_text!r}; use debug, info, warning, error or critical")
        return 2
    config_path, config_source = from_env(args.config, "--config", "DRIFTLINE_CONFIG")
    if config_path == "":  # Path('') is '.': "config .: cannot read it: Is a directory"
        fail(err, f"{config_source}: empty: give the path of a YAML config, or leave it out for the built-in defaults")
        return 2
    before = set(logging.getLogger().handlers)
    logging.basicConfig(level=level, format=LOG_FORMAT)
    for handler in set(logging.getLogger().handlers) - before:  # the one basicConfig added, if any
        handler.setFormatter(VisibleFormatter(LOG_FORMAT))
    quiet_pipeline_exit_echo()  # a session ended in a pipelined read: driftline's line says it, not psycopg twice
    log = logging.getLogger("driftline")
    ctx: Context | None = None
    args.config_path = config_path
    try:
        try:
            config, keys = load_named(config_path)
        except ConfigError as e:
            log.debug("config refused", exc_info=True)
            named = "" if config_source == "--config" else f" (the path given by {config_source})"
            if hasattr(args, "on_config_error"):  # `config check --json`: the error as its document
                return int(args.on_config_error(err, ReaderConsole(highlight=False), args, f"{e}{named}"))
            fail(err, f"{e}{named}")  # the message opens with `config PATH:`
            return 2
        db_url, db_source = ("", "none") if getattr(args, "no_database", False) else resolve_db(args.db, config)
        ctx = Context(config=config, db_url=db_url, console=ReaderConsole(highlight=False), err=err,
                      model_named="model" in keys, db_source=db_source, creates=not reads_only(args))
        tune_for_batches()
        return int(args.func(ctx, args) or 0)
    except (ConfigError, NotADatabase, SchemaTooNew, MigrationFailed) as e:
        log.debug("command refused", exc_info=True)
        fail(err, str(e))
        return 2
    except StoreUnavailable as e:
        log.debug("database unavailable", exc_info=True)
        err.print(f"[red]database unavailable:[/red] {escape(visible(e))}", soft_wrap=True)
        return 3
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except OSError as e:  # a path that cannot be written or read, a port already taken: one line, not a traceback
        log.debug("command failed", exc_info=True)
        fail(err, f"{e.filename}: {e.strerror}" if e.filename and e.strerror else e.strerror or str(e))  # no
        # "[Errno 98]": OSError(errno, text) reads "[Errno 98] text" (`serve --port` taken)
        return 2
    except Exception as e:  # noqa: BLE001 - a bug: one line for users, the traceback with --log-level debug
        log.debug("unexpected error", exc_info=True)
        fail(err, f"unexpected {type(e).__name__}: {e} (run with --log-level debug for the traceback)")
        return 1
    finally:
        if ctx is not None:
            ctx.close()


if __name__ == "__main__":
    sys.exit(main())
