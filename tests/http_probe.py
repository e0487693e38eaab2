"""One HTTP GET of an exporter endpoint, as an SRE's `curl -m` sees it (shared by the service tests)."""

from __future__ import annotations

import urllib.error
import urllib.request


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    """(status, body) of a GET; (0, the error) when nothing answers within `timeout` seconds."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError as err:
        return 0, str(err)
