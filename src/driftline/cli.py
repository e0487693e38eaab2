"""The `driftline` command line: global --config/--db options and the subcommands."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from rich.console import Console
from rich.markup import escape

from . import __version__
from .config import ConfigError, load
from .context import Context, resolve_db
from .storage.store import StoreUnavailable
from .terminal import LOG_FORMAT, VisibleFormatter, visible

COMMANDS = ("ingest", "query", "simulate", "demo", "alerts", "serve", "ab", "drift_cmds", "report", "kafka_cmds")
"""Modules of driftline.commands, each registering its subcommands."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="driftline", description=__doc__)
    parser.add_argument("--config", default=os.environ.get("DRIFTLINE_CONFIG"),
                        help="YAML config (env DRIFTLINE_CONFIG; default: built-in defaults, domain-neutral, no costs)")
    parser.add_argument("--db", default=None,
                        help="database URL (env DRIFTLINE_DB; default sqlite:///driftline.db)")
    parser.add_argument("--log-level", default=os.environ.get("DRIFTLINE_LOG_LEVEL", "WARNING"))
    parser.add_argument("--version", action="version", version=f"driftline {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"driftline.commands.{name}").register(sub)
    return parser


def log_level(text: str) -> int | None:
    """The logging level named by --log-level (any case), or None when there is no such level."""
    level = logging.getLevelNamesMapping().get(text.strip().upper())
    return level if level is not None and text.strip() else None


def fail(err: Console, message: str) -> None:
    """One line `error: ...` on stderr: control characters escaped, rich markup shown as written, never wrapped."""
    err.print(f"[red]error:[/red] {escape(visible(message))}", soft_wrap=True)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    err = Console(stderr=True, highlight=False)
    level = log_level(args.log_level)
    if level is None:
        fail(err, f"--log-level: unknown level {args.log_level!r}; use debug, info, warning, error or critical")
        return 2
    before = set(logging.getLogger().handlers)
    logging.basicConfig(level=level, format=LOG_FORMAT)
    for handler in set(logging.getLogger().handlers) - before:  # the one basicConfig added, if any
        handler.setFormatter(VisibleFormatter(LOG_FORMAT))
    log = logging.getLogger("driftline")
    ctx: Context | None = None
    try:
        try:
            config = load(args.config)
        except ConfigError as e:
            log.debug("config refused", exc_info=True)
            fail(err, f"config error: {e}")
            return 2
        ctx = Context(config=config, db_url=resolve_db(args.db, config), console=Console(), err=err)
        return int(args.func(ctx, args) or 0)
    except ConfigError as e:
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
        return 0
    except OSError as e:  # a path that cannot be written or read, a port already taken: one line, not a traceback
        log.debug("command failed", exc_info=True)
        fail(err, str(e))
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
