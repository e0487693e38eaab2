"""Issue 13 part 4: a scrape client that hangs up before the answer leaves no traceback in the log, at most a
debug line, and the exporter keeps serving."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
import urllib.request

from prometheus_client import CollectorRegistry

from driftline.exporter.http import ExporterServer
from driftline.storage.store import Store

from scrape_gate import Gate


def _handlers_running() -> bool:
    return any("process_request" in t.name for t in threading.enumerate())


def test_client_hanging_up_mid_scrape_leaves_no_traceback(tmp_path, capsys, caplog) -> None:
    gate = Gate(10)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(gate)
    store = Store(f"sqlite:///{tmp_path / 'd.db'}")
    server = ExporterServer(registry, store, port=0)
    server.start()
    caplog.set_level(logging.DEBUG, logger="driftline")
    try:
        for _ in range(3):
            gate.entered.clear()
            gate.release.clear()
            s = socket.create_connection(server.address)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert gate.entered.wait(10)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()  # a reset: the answer meets a hung-up client
            gate.release.set()
            deadline = time.monotonic() + 10
            while _handlers_running() and time.monotonic() < deadline:
                time.sleep(0.02)
        gate.release.set()
        with urllib.request.urlopen(f"{server.url}/metrics", timeout=10) as r:  # still serving
            assert b"gate 1.0" in r.read()
    finally:
        gate.release.set()
        server.stop()
        store.close()
    err = capsys.readouterr().err
    assert "Traceback" not in err and "BrokenPipe" not in err and "ConnectionReset" not in err, err
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert any("hung up" in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG), caplog.text


def test_the_scrape_bound_is_exporter_scrape_timeout(tmp_path) -> None:
    """The 8 s scrape bound was hard-coded; `exporter.scrape_timeout` sets it (a scrape held past it answers 503
    naming the bound), and a bad value is refused at start naming the field."""
    import urllib.error

    import pytest

    from driftline.config import ConfigError, from_dict
    from driftline.service.process import Service

    assert from_dict({}).exporter.scrape_timeout == "8s"
    for bad, why in (("0s", "duration must be positive"), ("3 seconds", "a number and a unit")):
        with pytest.raises(ConfigError, match=r"`exporter.scrape_timeout`") as err:
            from_dict({"exporter": {"scrape_timeout": bad}})
        assert why in str(err.value), err.value
    config = from_dict({"model": "m", "exporter": {"scrape_timeout": "1s"}})  # the shortest allowed
    store = Store(f"sqlite:///{tmp_path / 'd.db'}")
    store.migrate()
    svc = Service(config, store, port=0, evaluate=False)
    gate = Gate(10)
    svc.registry.register(gate)
    svc.start_exporter()
    try:
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(f"{svc.url}/metrics", timeout=30)
        assert failed.value.code == 503
        assert failed.value.read().decode().startswith("scrape failed: scrape did not finish within 1s")
    finally:
        gate.release.set()
        svc.stop()
        store.close()


def test_an_absurd_scrape_bound_is_refused_at_start_naming_the_field() -> None:
    """SRE tryout: `9999999d` was accepted, then every scrape was a 500 (OverflowError: timestamp out of range);
    `0.001s` made every scrape 503; `100s` outlasted Prometheus's own scrape timeout. 1s..60s is accepted."""
    import pytest

    from driftline.config import ConfigError, from_dict

    for bad in ("0.001s", "0.5s", "100s", "2m"):
        with pytest.raises(ConfigError, match=r"`exporter.scrape_timeout`: .* is outside 1s\.\.60s") as err:
            from_dict({"exporter": {"scrape_timeout": bad}})
        assert "Prometheus" in str(err.value), err.value
    with pytest.raises(ConfigError, match=r"`exporter.scrape_timeout`: 9999999d is longer than 36525d"):
        from_dict({"exporter": {"scrape_timeout": "9999999d"}})  # every duration's 100-year bound comes first
    for good in ("1s", "8s", "60s", "1m"):
        assert from_dict({"exporter": {"scrape_timeout": good}}).exporter.scrape_timeout == good
