"""Caps glibc's malloc arenas from inside the process, as MALLOC_ARENA_MAX=2 does from outside, set once at start-up
by the CLI (the composition root).

glibc gives each new thread its own malloc arena (up to 8 per core). `serve` and `run` answer every Prometheus
scrape on a thread of its own, and each arena fragments on its own: `run` on PostgreSQL with a drift reference
scraped every 5 s grew to 575 MB steady and a 740 MB peak, and stayed at 405-415 MB with two arenas (on-call
tryout). The Dockerfile sets the variable, but a user running driftline outside the image would not; capping here
keeps the measured figure wherever it runs. A MALLOC_ARENA_MAX the user set wins.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Mapping

ARENAS = 2
"""Arenas the process keeps (glibc's default: 8 per core)."""
M_ARENA_MAX = -8
"""mallopt's parameter number for the arena limit (glibc malloc.h)."""


def cap_malloc_arenas(env: Mapping[str, str], arenas: int = ARENAS) -> bool:
    """Limit glibc to `arenas` malloc arenas for the threads started from now on; whether it did (False: not Linux,
    not glibc, or MALLOC_ARENA_MAX or the glibc.malloc.arena_max tunable set: glibc read them at start-up, they
    are the user's choice, and mallopt would silently override them)."""
    if env.get("MALLOC_ARENA_MAX") or "glibc.malloc.arena_max=" in env.get("GLIBC_TUNABLES", "") \
            or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # musl (Alpine) or no libc.so.6: nothing to cap
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, arenas))
