"""Label values from events are exported escaped, and the escape is injective (SRE tryout: a variant
'junkvar-N-\\u202e\\x1b[31m' was exported raw, its RLO and ESC garbling Grafana legends and alert text).
`visible` alone leaves a backslash as it is, so 'a\\x1b' (an ESC) and 'a\\\\x1b' (a backslash, then 'x1b') would
show alike and become one duplicate series; the exporter's escape doubles backslashes too."""

from __future__ import annotations

import re
import shutil
import subprocess

import msgspec
import pytest
from hypothesis import given, strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from driftline.config import load
from driftline.exporter.collector import SnapshotCollector
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.storage.store import Store
from driftline.terminal import _UNSAFE, visible, visible_exact
from driftline.triggers.rules import _sel

from helpers import before_name_rule
from test_freshness import EXAMPLE, T0

HOSTILE = ["junkvar-1-\u202e\x1b[31m", "a\x1b", "a\\x1b", "a\\\\x1b", "b\\", "b\\\\", "fr\u200baud"]
EXPORTED = HOSTILE[:3]
"""Within the example's new-variant limit: the hostile one and the pair a naive escape would collide."""
_ESC = re.compile(r"\\(\\|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})")


def _unescape(shown: str) -> str:
    """Read a visible_exact text back: every backslash starts exactly one escape."""
    assert "\\" not in _ESC.sub("", shown), shown  # no stray backslash
    return _ESC.sub(lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1)[1:], 16)), shown)


def test_a_naive_escape_would_collide_and_the_exporters_does_not() -> None:
    assert visible("a\x1b") == visible("a\\x1b")  # why visible() alone cannot make label values
    shown = [visible_exact(n) for n in HOSTILE]
    assert len(set(shown)) == len(HOSTILE)
    assert visible_exact("plain-name_1.0") == "plain-name_1.0"


@given(st.text())
def test_visible_exact_reads_back_exactly_and_shows_nothing_unsafe(text: str) -> None:
    shown = visible_exact(text)
    assert not _UNSAFE.search(shown)
    assert _unescape(shown) == text


def test_exported_variants_are_escaped_distinct_and_valid(tmp_path, monkeypatch) -> None:
    """Names with a control character are refused at decode now (name_rule.py), but a database written before
    holds them: stored as then, they must be exported escaped."""
    store = Store(f"sqlite:///{tmp_path / 'l.db'}", clock=lambda: T0)
    store.migrate()
    config = load(EXAMPLE)
    before_name_rule(monkeypatch)
    try:
        Pipeline(config, store, clock=lambda: T0).process_batch([RawRecord("f", 0, i, msgspec.json.encode({
            "type": "prediction", "prediction_id": f"p{i}", "model": "fraud", "model_version": "v1", "variant": v,
            "ts": "2026-11-29T23:00:00Z", "score": 0.3, "features": {}})) for i, v in enumerate(EXPORTED)])
        reg = CollectorRegistry()
        reg.register(SnapshotCollector(store, config, clock=lambda: T0))
        text = generate_latest(reg).decode()
    finally:
        store.close()
    assert not _UNSAFE.search(text.replace("\n", ""))  # no ESC, RLO, zero-width space in the exposition
    variants = [s.labels["variant"] for fam in text_string_to_metric_families(text) for s in fam.samples
                if s.name == "driftline_window_predictions" and s.labels["model_version"] == "v1"]
    assert sorted(variants) == sorted(visible_exact(v) for v in EXPORTED)
    assert sorted(_unescape(v) for v in variants) == sorted(EXPORTED)
    if shutil.which("promtool"):  # a duplicate series would fail here
        check = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True)
        assert b"duplicate" not in check.stdout + check.stderr, check.stderr


def test_generated_alert_rules_select_the_escaped_values() -> None:
    assert _sel({"variant": "a\\b\x1b"}) == '{variant="a\\\\\\\\b\\\\x1b"}'
