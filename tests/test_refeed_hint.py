"""Hostile-user tryout: `driftline models list` kept printing "the events refused before are stored only once fed
again: `driftline dead-letters --reason model_limit --model M --raw | driftline replay -`" after they had been fed
again that way (it went by the model's name alone: refused once, stored now). The hint is printed while some of the
model's refused events are not stored and would be if fed again; once none is, the line says nothing is left."""

from __future__ import annotations

import json

import msgspec
import pytest

from driftline import cli

END = 1_795_996_800.0  # 2026-11-30T00:00:00Z
DAY = 86400.0
_enc = msgspec.json.Encoder()


def _pred(pid: str, model: str, ts: float = END - 3 * DAY) -> bytes:
    return _enc.encode({"type": "prediction", "prediction_id": pid, "model": model, "variant": "A", "ts": ts,
                        "score": 0.7})


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _listed(capsys, base: list[str]) -> tuple[str, dict]:
    out = " ".join(_cli(capsys, *base, "models", "list")[1].split())
    return out, json.loads(_cli(capsys, *base, "models", "list", "--json")[1])["refused_admitted_since"]


def _feed(capsys, base: list[str], tmp_path, *extra: str) -> None:
    """`dead-letters --reason model_limit --model fraud --raw [extra] | driftline replay -`, through a file."""
    code, out, _ = _cli(capsys, *base, "dead-letters", "--reason", "model_limit", "--model", "fraud", "--raw", *extra)
    assert code == 0
    (tmp_path / "again.jsonl").write_text(out)
    assert _cli(capsys, *base, "replay", str(tmp_path / "again.jsonl"))[0] == 0


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_the_feed_again_hint_is_printed_only_while_refused_events_wait(tmp_path, capsys, monkeypatch, request, kind):
    monkeypatch.setenv("COLUMNS", "200")
    url = f"sqlite:///{tmp_path / 'm.db'}" if kind == "sqlite" else request.getfixturevalue("pg_url")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("limits:\n  max_models: 1\nlabels:\n  horizon: 30d\n")
    base = ["--config", str(cfg), "--db", url]
    old = _pred("f-old", "fraud", END - 60 * DAY)  # refused first, then past the horizon: feeding it cannot store it
    lines = [_pred("j0", "junk"), old, _pred("f1", "fraud"), _pred("f2", "fraud"), _pred("f3", "fraud")]
    (tmp_path / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    assert _cli(capsys, *base, "replay", str(tmp_path / "a.jsonl"))[0] == 0
    assert _cli(capsys, *base, "models", "forget", "junk", "--yes")[0] == 0
    (tmp_path / "n.jsonl").write_bytes(_pred("f9", "fraud", END) + b"\n")  # admitted now, a newer watermark
    assert _cli(capsys, *base, "replay", str(tmp_path / "n.jsonl"))[0] == 0

    out, doc = _listed(capsys, base)
    assert doc == {"fraud": {"refused": 4, "stored": 0, "too_old": 1, "unfeedable": 0, "waiting": 3, "unchecked": 0}}
    assert "admitted since they were refused: 'fraud' (3 refused events not stored yet)" in out, out
    assert "--model fraud --raw | driftline replay -`" in out

    _feed(capsys, base, tmp_path, "--limit", "2")  # the old one and f1: one of the three still waits
    out, doc = _listed(capsys, base)
    assert doc == {"fraud": {"refused": 4, "stored": 1, "too_old": 1, "unfeedable": 0, "waiting": 2, "unchecked": 0}}
    assert "'fraud' (2 refused events not stored yet)" in out and "--raw | driftline replay -`" in out, out

    _feed(capsys, base, tmp_path)
    out, doc = _listed(capsys, base)
    assert doc == {"fraud": {"refused": 4, "stored": 3, "too_old": 1, "unfeedable": 0, "waiting": 0, "unchecked": 0}}
    assert "--raw" not in out and "not stored yet" not in out, out
    assert ("admitted since they were refused, nothing left to feed again: 'fraud' (3 refused events stored since, "
            "1 older than the label horizon") in out, out


def test_the_scan_is_bounded_and_never_claims_unread_letters_fed(tmp_path, capsys, monkeypatch):
    """A junk-name flood can leave millions of model_limit dead letters: `models list` reads the newest
    refeed.MAX_CHECKED of them only, and while older ones were not read it never says nothing is left to feed."""
    from driftline.storage import refeed

    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(refeed, "MAX_CHECKED", 2)
    url = f"sqlite:///{tmp_path / 'm.db'}"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("limits:\n  max_models: 1\nlabels:\n  horizon: 30d\n")
    base = ["--config", str(cfg), "--db", url]
    lines = [_pred("j0", "junk"), _pred("f1", "fraud"), _pred("f2", "fraud"), _pred("f3", "fraud")]
    (tmp_path / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    assert _cli(capsys, *base, "replay", str(tmp_path / "a.jsonl"))[0] == 0
    assert _cli(capsys, *base, "models", "forget", "junk", "--yes")[0] == 0
    (tmp_path / "n.jsonl").write_bytes(_pred("f3", "fraud") + b"\n" + _pred("f2", "fraud") + b"\n")
    assert _cli(capsys, *base, "replay", str(tmp_path / "n.jsonl"))[0] == 0  # the two newest refused, fed again
    out, doc = _listed(capsys, base)
    assert doc == {"fraud": {"refused": 2, "stored": 2, "too_old": 0, "unfeedable": 0, "waiting": 0, "unchecked": 1}}
    assert "nothing left to feed again" not in out, out
    assert "'fraud' (0 refused events not stored yet among the newest 2 checked, 1 older not checked)" in out, out
