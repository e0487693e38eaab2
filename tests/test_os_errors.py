"""An OSError the CLI reports is one line without Python's "[Errno N]" prefix."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from driftline.cli import main


def test_serve_with_its_port_taken_says_so_without_an_errno(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Tryout: `serve --port N` taken ended `error: [Errno 98] cannot serve /metrics on …`."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["--db", f"sqlite:///{tmp_path / 'd.db'}", "serve", "--port", str(port)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: cannot serve /metrics on 127.0.0.1:{port}: Address already in use"]
