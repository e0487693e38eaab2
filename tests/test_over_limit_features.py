"""New-user tryout: 400 events of 901 features each, `max_features` 50: 851 names dropped out of monitoring and
neither `replay` nor `drift` (text or --json) said so. Now both say how many names went past the limit, name the
most frequent few, and count their occurrences; names are recorded bounded, like undeclared ones."""

from __future__ import annotations

import json
from collections import Counter

from driftline.cli import main
from driftline.core.feature_hists import count_over_limit
from driftline.core.limits import MAX_OVER_LIMIT_NAMES, OVER_LIMIT_COUNTER
from driftline.storage.store import Store

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
HOUR = 3600.0


def _events(path, n: int, width: int) -> None:
    lines = [json.dumps({"type": "prediction", "prediction_id": f"w{i}", "model": "wide", "ts": START + i * HOUR,
                         "score": (i % 10) / 10, "features": {f"f{j:03d}": (i * j) % 7 for j in range(width)}})
             for i in range(n)]
    path.write_text("\n".join(lines) + "\n")


def test_replay_and_drift_say_which_feature_names_went_past_max_features(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model: wide\nmax_features: 5\n")
    _events(tmp_path / "e.jsonl", 96, 12)
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'w.db'}"]
    capsys.readouterr()
    assert main([*base, "replay", str(tmp_path / "e.jsonl"), "--json"]) == 0
    out, err = capsys.readouterr()
    warned = [w for w in json.loads(out)["warnings"] if "max_features" in w]
    assert len(warned) == 1 and warned[0].startswith("7 feature names (f005 (96), f006 (96),"), warned
    assert "(672 occurrences;" in warned[0] and "max_features (5 tracked per bucket)" in warned[0]
    assert "7 feature names" in " ".join(err.split())

    assert main([*base, "reference", "set", "--from", "2026-01-01", "--to", "2026-01-03"]) == 0
    capsys.readouterr()
    assert main([*base, "drift", "--json", "--at", "2026-01-05T00:00:00Z", "--window", "1d"]) == 0
    over = json.loads(capsys.readouterr().out)["over_limit"]
    assert over["max_features"] == 5 and over["occurrences"] == 96 * 7 and over["names_complete"]
    assert [n["feature"] for n in over["names"]] == [f"f{j:03d}" for j in range(5, 12)]
    assert main([*base, "drift", "--at", "2026-01-05T00:00:00Z", "--window", "1d"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "7 feature names over max_features (5) not monitored: f005 (96), f006 (96)" in text, text
    assert "(672 occurrences)" in text
    assert main([*base, "report", "--week", "2026-W01", "--out", str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "report-wide-2026-W01.md").read_text()
    html = (tmp_path / "r" / "report-wide-2026-W01.html").read_text().replace("<wbr>", "")
    assert "7 feature names over `max_features` (5): f005 (96)" in md
    assert 'id="over-limit"' in html and "7 feature names over <code>max_features</code> (5)" in html


def test_no_over_limit_block_or_warning_within_max_features(tmp_path, capsys):
    _events(tmp_path / "e.jsonl", 48, 4)
    base = ["--db", f"sqlite:///{tmp_path / 'n.db'}"]
    assert main([*base, "replay", str(tmp_path / "e.jsonl"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == []
    assert main([*base, "reference", "set", "--model", "wide", "--from", "2026-01-01", "--to", "2026-01-02"]) == 0
    capsys.readouterr()
    assert main([*base, "drift", "--model", "wide", "--json", "--at", "2026-01-03T00:00:00Z"]) == 0
    assert json.loads(capsys.readouterr().out)["over_limit"] is None


def test_over_limit_names_are_bounded_per_batch_and_in_the_store(tmp_path):
    c: Counter[tuple[str, str]] = Counter()
    count_over_limit(c, Counter({f"f{i}": 2 for i in range(MAX_OVER_LIMIT_NAMES + 10)}))
    count_over_limit(c, Counter({"f0": 1, "new": 1}))
    assert sum(1 for n, _ in c if n == OVER_LIMIT_COUNTER) == MAX_OVER_LIMIT_NAMES
    assert c[(OVER_LIMIT_COUNTER, "f0")] == 3 and (OVER_LIMIT_COUNTER, "new") not in c
    assert c[("features_untracked", "over_limit")] == 2 * (MAX_OVER_LIMIT_NAMES + 10) + 2  # every occurrence
    store = Store(f"sqlite:///{tmp_path / 'b.db'}")
    store.migrate()
    try:
        half = MAX_OVER_LIMIT_NAMES // 2 + 10
        for batch in ({(OVER_LIMIT_COUNTER, f"a{i}"): 1 for i in range(half)},
                      {(OVER_LIMIT_COUNTER, f"b{i}"): 1 for i in range(half)} | {(OVER_LIMIT_COUNTER, "a0"): 5}):
            with store.write() as conn:
                store._add_counters(conn, batch)
        names = store.over_limit_features()
        assert len(names) == MAX_OVER_LIMIT_NAMES and names["a0"] == 6
    finally:
        store.close()
