"""A TCP proxy in front of PostgreSQL that counts, from the frontend protocol, the statements a client sends (each
simple Query and each extended-protocol Execute, BEGIN/SAVEPOINT/pings included) and its round trips (each time
the server answers after the client sent something): a deterministic measure of a batch's database cost, where CPU
seconds on a shared machine are not. Connect with sslmode=disable (the stream must be readable)."""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass, field


@dataclass
class Tally:
    """Statements and round trips seen since the last reset, and the statement texts in order."""

    statements: int = 0
    round_trips: int = 0
    texts: list[str] = field(default_factory=list)
    """Each statement as "<round trips completed before it was sent>| <text>"."""


class _Frontend:
    """Splits a client's byte stream into protocol messages (after the untyped startup/SSL request)."""

    def __init__(self) -> None:
        self.buf = b""
        self.started = False
        self.parsed = ""  # the text of the last Parse: an Execute runs it

    def feed(self, data: bytes, tally: Tally) -> None:
        self.buf += data
        while True:
            if not self.started:
                if len(self.buf) < 8:
                    return
                n, code = struct.unpack("!ii", self.buf[:8])
                if len(self.buf) < n:
                    return
                self.buf = self.buf[n:]
                self.started = code != 80877103 and code != 80877104  # SSL / GSS requests come before startup
                continue
            if len(self.buf) < 5:
                return
            kind, n = self.buf[:1], struct.unpack("!i", self.buf[1:5])[0]
            if len(self.buf) < 1 + n:
                return
            body, self.buf = self.buf[5:1 + n], self.buf[1 + n:]
            if kind == b"Q":
                tally.statements += 1
                tally.texts.append(f"{tally.round_trips}| " + body.rstrip(b"\0").decode(errors="replace"))
            elif kind == b"P":
                self.parsed = body.split(b"\0", 2)[1].decode(errors="replace")
            elif kind == b"E":
                tally.statements += 1
                tally.texts.append(f"{tally.round_trips}| {self.parsed}")


class WireCounter:
    """Listen on a free loopback port and forward each connection to PostgreSQL at (host, port), counting."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.tally = Tally()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self) -> Tally:
        """The tally so far, and start a new one."""
        with self._lock:
            got, self.tally = self.tally, Tally()
        return got

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            last = ["s"]
            front = _Frontend()
            threading.Thread(target=self._pump, args=(client, server, "c", last, front), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, "s", last, front), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, side: str, last: list[str], front: _Frontend) -> None:
        try:
            while data := src.recv(65536):
                with self._lock:
                    if side == "c":
                        front.feed(data, self.tally)
                    elif last[0] == "c":
                        self.tally.round_trips += 1
                    last[0] = side
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._listener.close()
