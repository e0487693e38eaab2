"""The CLI caps glibc's malloc arenas (driftline.malloc_arenas): every Prometheus scrape is answered on a thread of
its own, and with an arena per thread `run` fragmented to 575 MB steady against 405-415 MB with two (on-call
tryout). Counted with glibc's own malloc_info in a fresh process: eight threads alive at once each allocate, then
the arenas ("<heap nr=") are counted."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from driftline.malloc_arenas import cap_malloc_arenas

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc",
                                reason="glibc only (malloc arenas and malloc_info are glibc's)")

PROBE = """
import ctypes, sys, tempfile, threading
from driftline import cli
try:
    cli.main(["--help"])
except SystemExit:
    pass
barrier, kept = threading.Barrier(8), []
def work():
    kept.extend(bytearray(4096) for _ in range(200))  # above pymalloc's 512 bytes: glibc malloc
    barrier.wait()  # all eight alive at once, so none inherits an arena a finished thread left
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype = ctypes.c_void_p
with tempfile.NamedTemporaryFile(suffix=".xml") as f:
    fp = ctypes.c_void_p(libc.fopen(f.name.encode(), b"w"))
    libc.malloc_info(0, fp)
    libc.fclose(fp)
    print(open(f.name).read().count("<heap nr="))
"""


def _arenas(env: dict[str, str]) -> int:
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120,
                         check=True)
    return int(out.stdout.strip().splitlines()[-1])


def test_the_cli_keeps_threads_to_two_malloc_arenas() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    assert _arenas(env) <= 2  # without the cap: 9 (the main thread's and one per thread)


def test_a_malloc_arena_max_the_user_set_wins() -> None:
    assert cap_malloc_arenas({"MALLOC_ARENA_MAX": "4"}) is False
    env = {**os.environ, "MALLOC_ARENA_MAX": "4"}
    assert 2 < _arenas(env) <= 4


def test_an_arena_max_tunable_the_user_set_wins() -> None:
    """GLIBC_TUNABLES=glibc.malloc.arena_max=N is glibc's other way to set the limit (verify tryout: the CLI's
    mallopt overrode it, 2 arenas with arena_max=4, while MALLOC_ARENA_MAX=4 was kept)."""
    assert cap_malloc_arenas({"GLIBC_TUNABLES": "glibc.malloc.arena_max=4"}) is False
    assert cap_malloc_arenas({"GLIBC_TUNABLES": "glibc.malloc.check=0"}) is True
    env = {**{k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"},
           "GLIBC_TUNABLES": "glibc.malloc.arena_max=4"}
    assert 2 < _arenas(env) <= 4
