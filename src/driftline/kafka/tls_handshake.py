"""A deadline on kafka-python's TLS handshake (security_protocol SSL / SASL_SSL).

kafka-python 3.0 bounds a connection's TCP connect (its setup deadline) but not the TLS handshake that follows:
`KafkaSSLTransport.handshake` waits for the peer's answer with no timeout. A peer that accepts the connection and
never answers the ClientHello (a load balancer or proxy without a live backend, a plaintext listener that reads
the ClientHello as the start of a huge request, as tansu does) then held the client forever: `run` hung inside
KafkaAdminClient's bootstrap on its main thread, logged nothing, answered /readyz "kafka connecting" without a
reason and ignored SIGTERM. Here the handshake's reads and writes wait at most HANDSHAKE_S, as the Java client's
socket.connection.setup.timeout.ms (10 s) bounds the whole setup including TLS; a handshake not answered by then
fails the connection (kafka-python's "Handshake failed: I/O wait timed out"), which takes the ordinary path of an
unreachable broker (backoff, a WARNING, /readyz 503 with the reason, a stop honoured between attempts).

`install` replaces the method once per process, before driftline builds its first client (settings._kwargs); a
kafka-python whose handshake already takes a deadline is left alone."""

from __future__ import annotations

import inspect
import logging
import ssl
import time
from typing import Any

log = logging.getLogger(__name__)

HANDSHAKE_S = 10.0
"""How long a TLS handshake may wait for the peer in all (the Java client's connection setup timeout)."""


async def _bounded_handshake(self: Any) -> None:
    """kafka-python's KafkaSSLTransport.handshake with its waits ending at a deadline (KafkaTimeoutError then)."""
    deadline = time.monotonic() + HANDSHAKE_S
    while True:
        try:
            self._sock.do_handshake()
            log.debug("%s: TLS handshake done", self)
            return
        except ssl.SSLWantReadError:
            await self._net.wait_read(self._sock, timeout_at=deadline)
        except ssl.SSLWantWriteError:
            await self._net.wait_write(self._sock, timeout_at=deadline)


def install() -> bool:
    """Give kafka-python's TLS handshake its deadline (idempotent); False when its handshake has one already or its
    layout is not the one patched here (nothing is changed then)."""
    try:
        from kafka.net.transport import KafkaSSLTransport
    except ImportError:  # another kafka-python layout: nothing to patch
        return False
    current = KafkaSSLTransport.handshake
    if current is _bounded_handshake:
        return True
    if len(inspect.signature(current).parameters) != 1 or not inspect.iscoroutinefunction(current):
        return False  # a handshake that takes a timeout (or another shape): kafka-python's own is kept
    KafkaSSLTransport.handshake = _bounded_handshake  # type: ignore[method-assign]
    return True
