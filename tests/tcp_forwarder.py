"""A small threaded TCP forwarder that a test can stop and restart on the same port.

Used to make a service (the tansu broker, PostgreSQL) unreachable mid-stream without killing it:
``stop()`` closes the listening socket *and* drops every live connection (clients see a reset /
EOF, new connects are refused); ``start()`` listens again on the same port and forwards anew.
``pause()`` stops relaying and accepting without closing anything (the kernel still acknowledges what is sent,
like a stopped proxy or a partition that drops no connection); ``resume()`` relays the buffered bytes on.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Iterator

_CHUNK = 65536


class TcpForwarder:
    """Forward every connection accepted on ``listen_host:port`` to ``target_host:target_port``."""

    def __init__(
        self,
        target_host: str,
        target_port: int,
        listen_host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.target = (target_host, target_port)
        self.listen_host = listen_host
        self.port = port
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()
        self._running = False
        self._relaying = threading.Event()
        self._relaying.set()
        self.accepted = 0  # connections accepted since construction (all generations)

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def address(self) -> str:
        """``host:port`` clients should connect to."""
        return f"{self.listen_host}:{self.port}"

    @property
    def running(self) -> bool:
        """True while the forwarder listens and forwards."""
        return self._running

    def start(self) -> TcpForwarder:
        """Listen (on the same port as before, if one was already chosen) and forward connections."""
        with self._lock:
            if self._running:
                return self
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((self.listen_host, self.port))
            except OSError:
                sock.close()
                raise
            sock.listen(128)
            self.port = sock.getsockname()[1]
            self._listener = sock
            self._running = True
            self._accept_thread = threading.Thread(
                target=self._accept_loop, args=(sock,), name=f"fwd-accept-{self.port}", daemon=True
            )
            self._accept_thread.start()
        return self

    def stop(self) -> None:
        """Close the listener and drop all live connections (both sides get a reset / EOF)."""
        with self._lock:
            self._running = False
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, set()
            thread, self._accept_thread = self._accept_thread, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for conn in conns:
            _hard_close(conn)
        if thread is not None:
            thread.join(timeout=5)

    def pause(self) -> None:
        """Stop relaying bytes and accepting connections; every socket stays open."""
        self._relaying.clear()

    def resume(self) -> None:
        """Relay again what was held and accept the connections waiting in the backlog."""
        self._relaying.set()

    def restart(self) -> None:
        """``stop()`` then ``start()`` on the same port."""
        self.stop()
        self.start()

    def live_connections(self) -> int:
        """Number of sockets (client and upstream sides) currently being forwarded."""
        with self._lock:
            return len(self._conns)

    def __enter__(self) -> TcpForwarder:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals -----------------------------------------------------------------------------

    def _accept_loop(self, listener: socket.socket) -> None:
        while True:
            try:
                ready, _, _ = select.select([listener], [], [], 0.2)
            except (OSError, ValueError):
                return
            if not self._running or self._listener is not listener:
                return
            if not self._relaying.is_set():
                self._relaying.wait(0.2)  # paused: connections wait in the backlog
                continue
            if not ready:
                continue
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _hard_close(client)  # target down: behave like a refused connection
                continue
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                if not self._running:
                    _hard_close(client)
                    _hard_close(upstream)
                    return
                self._conns.update((client, upstream))
                self.accepted += 1
            threading.Thread(
                target=self._pump_pair, args=(client, upstream), name="fwd-pump", daemon=True
            ).start()

    def _pump_pair(self, a: socket.socket, b: socket.socket) -> None:
        peer = {a: b, b: a}
        try:
            while True:
                try:
                    ready, _, _ = select.select([a, b], [], [], 0.5)
                except (OSError, ValueError):
                    return
                if a.fileno() < 0 or b.fileno() < 0:
                    return
                if not self._relaying.is_set():
                    self._relaying.wait(0.5)
                    continue
                for src in ready:
                    data = src.recv(_CHUNK)
                    if not data:
                        return
                    peer[src].sendall(data)
        except OSError:
            return
        finally:
            with self._lock:
                self._conns.discard(a)
                self._conns.discard(b)
            _hard_close(a)
            _hard_close(b)


def _hard_close(sock: socket.socket) -> None:
    """Shut down and close a socket, ignoring errors (it may already be closed)."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (bind to 0, read, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def forwarding(target_host: str, target_port: int, port: int = 0) -> Iterator[TcpForwarder]:
    """Context manager: a started forwarder to ``target``, stopped on exit."""
    fwd = TcpForwarder(target_host, target_port, port=port).start()
    try:
        yield fwd
    finally:
        fwd.stop()
