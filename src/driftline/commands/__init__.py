"""CLI subcommands: each module exposes `register(subparsers)` which adds its parser and handler."""
