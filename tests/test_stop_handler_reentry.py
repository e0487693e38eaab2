"""A stop signal that lands while the main thread holds the stop event's lock (inside the first signal's
`stop.set()`: two SIGTERMs at once, as `timeout` sends to its child and the child's process group) must not
deadlock. Tryout: `timeout 12 driftline run` stopped with `kill` never exited; four handlers were stacked in the
main thread, each blocked in `stop.set()` on the Event's condition lock the interrupted first one held."""

from __future__ import annotations

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import os, signal, threading
    from driftline.commands.serve import install_stop_handlers
    stop = threading.Event()
    install_stop_handlers(stop)
    with stop._cond:  # the state of a main thread interrupted inside Event.set() (or Event.wait's locked part)
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):
            pass  # bytecode boundaries: the handler runs here, in this thread
    print("handler returned", flush=True)
    print("stop set:", stop.wait(30), flush=True)
""")


def test_a_stop_signal_inside_the_stop_events_lock_does_not_deadlock() -> None:
    try:
        out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired as e:  # a hang guard, not a timing assertion: the deadlock never ends
        raise AssertionError("the signal handler deadlocked on the stop event's lock") from e
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["handler returned", "stop set: True"]


def test_a_second_ctrl_c_still_exits_at_once_after_the_first() -> None:
    child = textwrap.dedent("""
        import os, signal, threading, time
        from driftline.commands.serve import install_stop_handlers
        stop = threading.Event()
        install_stop_handlers(stop)
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)
        print("not exited", flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=30)
    assert out.returncode == 130, (out.returncode, out.stdout, out.stderr)
    assert "stopping cleanly" in out.stderr and "interrupted again" in out.stderr


def test_ctrl_c_during_a_write_to_stderr_does_not_raise_into_the_interrupted_code() -> None:
    """The handler runs in the main thread between two bytecodes, possibly inside a sys.stderr write: writing its
    message through sys.stderr there raised `RuntimeError: reentrant call` into the interrupted code (tryout). The
    stub below raises that on any use: the messages must reach standard error's descriptor without it."""
    child = textwrap.dedent("""
        import os, signal, sys, threading, time
        from driftline.commands.serve import install_stop_handlers

        class InsideAWrite:
            def write(self, text):
                raise RuntimeError("reentrant call inside sys.stderr")
            def flush(self):
                raise RuntimeError("reentrant call inside sys.stderr")

        stop = threading.Event()
        install_stop_handlers(stop)
        real, sys.stderr = sys.stderr, InsideAWrite()
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):
                pass  # the handler runs here
            print("stop set:", stop.wait(30), flush=True)
        finally:
            sys.stderr = real
        sys.stderr = InsideAWrite()
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)
        print("not exited", flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert out.returncode == 130, (out.returncode, out.stdout, out.stderr)
    assert out.stdout.splitlines() == ["stop set: True"], out.stdout
    assert "stopping cleanly" in out.stderr and "interrupted again" in out.stderr and "reentrant" not in out.stderr
