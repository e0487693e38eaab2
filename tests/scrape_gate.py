"""A Prometheus collector that holds a scrape until the test releases it (the exporter's scrape tests)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector


class Gate(Collector):
    """Sets `entered` when a scrape reaches it, then holds that scrape until `release` is set (at most `hold_s`
    seconds: a hang guard), and answers one gauge."""

    def __init__(self, hold_s: float) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.hold_s = hold_s

    def collect(self) -> Iterable[Any]:
        self.entered.set()
        self.release.wait(self.hold_s)
        g = GaugeMetricFamily("gate", "a gauge")
        g.add_metric([], 1.0)
        yield g
