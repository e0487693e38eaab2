"""Skip-or-fail helpers for tests that need external tools (promtool, amtool, chromium, ...).

A missing tool skips the test with a clear reason, or fails it when ``DRIFTLINE_REQUIRE_SERVICES=1``
(CI sets it, after `.ci/install-tools.sh` has installed the tools from Debian's packages).
"""

from __future__ import annotations

import os
import shutil

import pytest

REQUIRE_ENV = "DRIFTLINE_REQUIRE_SERVICES"

# Debian package that provides each tool, named in the skip/fail message.
PACKAGES = {
    "promtool": "prometheus",
    "prometheus": "prometheus",
    "amtool": "prometheus-alertmanager",
    "alertmanager": "prometheus-alertmanager",
    "prometheus-alertmanager": "prometheus-alertmanager",
    "chromium": "chromium",
}


def services_required() -> bool:
    """True when ``DRIFTLINE_REQUIRE_SERVICES=1``: a missing tool or service is an error, not a skip."""
    return os.environ.get(REQUIRE_ENV, "").strip() == "1"


def require_binary(name: str) -> str:
    """Absolute path of executable `name` on PATH; skips the calling test when absent (fails if required)."""
    path = shutil.which(name)
    if path:
        return path
    package = PACKAGES.get(name)
    hint = f"apt-get install {package} (or bash .ci/install-tools.sh)" if package else "install it"
    skip_or_fail(f"{name} not found on PATH: {hint}")
    raise AssertionError("unreachable")


def skip_or_fail(reason: str) -> None:
    """pytest.skip(reason), or pytest.fail(reason) in CI where services are required (never returns)."""
    if services_required():
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1, so this is an error)", pytrace=False)
    pytest.skip(reason)
