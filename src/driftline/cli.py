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

COMMANDS = ("ingest", "query", "simulate", "demo", "alerts", "serve", "ab", "drift_cmds", "report", "kafka_cmds")
"""Modules of driftline.commands, each registering its subcommands."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="driftline", description=__doc__)
    parser.add_argument("--config", default=os.environ.get("DRIFTLINE_CONFIG"),
                        help="YAML config (env DRIFTLINE_CONFIG; default: built-in fraud example)")
    parser.add_argument("--db", default=None,
                        help="database URL (env DRIFTLINE_DB; default sqlite:///driftline.db)")
    parser.add_argument("--log-level", default=os.environ.get("DRIFTLINE_LOG_LEVEL", "WARNING"))
    parser.add_argument("--version", action="version", version=f"driftline {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"driftline.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    err = Console(stderr=True)
    try:
        config = load(args.config)
        ctx = Context(config=config, db_url=resolve_db(args.db, config), console=Console(), err=err)
    except ConfigError as e:
        err.print(f"[red]config error:[/red] {escape(str(e))}")
        return 2
    try:
        return int(args.func(ctx, args) or 0)
    except ConfigError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}")
        return 2
    except StoreUnavailable as e:
        err.print(f"[red]database unavailable:[/red] {escape(str(e))}")
        return 3
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except OSError as e:  # a path that cannot be written or read, a port already taken: one line, not a traceback
        logging.getLogger("driftline").debug("command failed", exc_info=True)
        err.print(f"[red]error:[/red] {escape(str(e))}")
        return 2
    finally:
        ctx.close()


if __name__ == "__main__":
    sys.exit(main())
