"""Issue 13 part 4: event text with terminal control sequences (retitle the terminal, clear the screen, colours,
bidi overrides) and rich markup is shown escaped by every human-readable command, never acted on or swallowed.

The hostile names and payloads go in the way real data does (`driftline replay`), then each command's output
must hold no raw control character but newline and tab, and must still show the text (escaped)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from driftline.cli import main
from driftline.terminal import visible

from helpers import before_name_rule, outcome, pred

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z, a Thursday
DAY = 86400.0
TITLE = "\x1b]0;pwned\x07\x1b[2J"  # set the terminal title, clear the screen
VARIANT = "B\x1b[31m[red]red[/red]\u202e"
VERSION = "v2\x1b[5m\x9b"
FEATURE = "amo\x1b[2Junt"
COUNTRY = "country"
VALUE = "FR\x1b]0;title\x07"
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _events() -> bytes:
    """Two weeks of a model with a hostile variant, version, feature name and category value, plus payloads that
    are dead-lettered with control characters in them."""
    lines = []
    for d in range(14):
        for i in range(120):
            pid, ts = f"d{d}-{i}", T0 + d * DAY + i * 600
            variant = "A" if i % 2 else VARIANT
            feats = {FEATURE: float(i % 17 + (5 * d if d > 7 else 0)), COUNTRY: VALUE if i % 3 else "DE"}
            label = int(i % 9 == 0)
            lines.append(pred(pid, 0.8 if label or i % 7 == 0 else 0.2, ts, variant=variant, model_version=VERSION,
                              features=feats))
            lines.append(outcome(pid, label, ts + 3600))
    lines.append(b'{"type":"prediction","prediction_id":"' + TITLE.encode() + b'"}')  # raw ESC: invalid JSON
    lines.append(json.dumps({"type": "prediction", "prediction_id": "x" + TITLE, "model": "fraud",
                             "ts": T0, "score": 7}).encode())  # score_out_of_range, detail may quote the id
    lines.append(json.dumps({"type": TITLE, "prediction_id": "y"}).encode())  # unknown_type
    return b"\n".join(lines) + b"\n"


CONFIG = {
    "model": "fraud",
    "slices": [COUNTRY],
    # no ab.arms or trigger variant naming VARIANT: a config may not name what events may not carry (10997d3); the
    # hostile variant reaches every readout from the database written before decode refused it
    "triggers": [{"name": "recall_low", "metric": "recall", "op": "<", "value": 0.9, "window": "7d", "min_n": 1},
                 {"name": "feature_psi", "metric": "psi", "feature": FEATURE, "op": ">", "value": 0.01,
                  "window": "7d", "min_n": 1}],
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], Path]:
    """Global options of a database holding the hostile events (replayed from a file whose name is hostile too)
    with a reference set on the first week, and the working directory."""
    tmp = tmp_path_factory.mktemp("hostile")
    (tmp / "c.yaml").write_text(json.dumps(CONFIG))  # JSON is YAML; \\u001b escapes stay escapes
    opts = ["--config", str(tmp / "c.yaml"), "--db", f"sqlite:///{tmp / 'd.db'}"]
    path = tmp / f"events{TITLE}.jsonl"
    path.write_bytes(_events())
    with pytest.MonkeyPatch.context() as mp:  # the hostile variant and version as a database from before decode
        before_name_rule(mp)  # refused such names holds them
        assert main([*opts, "replay", str(path), "--json"]) == 0
    assert main([*opts, "reference", "set", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-08T00:00:00Z",
                 "--json"]) == 0
    assert main([*opts, "alerts", "evaluate", "--at", "2026-01-15T00:00:00Z", "--no-notify", "--json"]) == 0
    return opts, tmp


def _check(text: str, where: str) -> None:
    bad = sorted({hex(ord(c)) for c in UNSAFE.findall(text)})
    assert not bad, f"{where}: raw control characters {bad} in:\n{text!r}"


COMMANDS = [
    ["replay", "{path}"],
    ["dead-letters"],
    ["dead-letters", "--reason", "invalid_json"],
    ["metrics"],
    ["metrics", "--variant", VARIANT],
    ["metrics", "--model-version", VERSION],
    ["drift"],
    ["drift", "--variant", VARIANT],
    ["ab"],
    ["calibration"],
    ["calibration", "--variant", VARIANT],
    ["slices"],
    ["reference", "list"],
    ["reference", "show"],
    ["alerts"],
    ["alerts", "evaluate", "--at", "2026-01-15T00:00:00Z", "--dry-run"],
    ["reference", "show", "--model", TITLE],
    ["metrics", "--model", TITLE],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: visible(" ".join(c)))
def test_every_readable_command_escapes_event_text(hostile, capsys, monkeypatch, command: list[str]) -> None:
    opts, tmp = hostile
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.chdir(tmp)
    argv = [a.replace("{path}", str(tmp / f"events{TITLE}.jsonl")) for a in command]
    main([*opts, *argv])
    out, err = capsys.readouterr()
    _check(out, "stdout")
    _check(err, "stderr")
    assert out or err


def test_names_and_payloads_are_shown_escaped_not_dropped(hostile, capsys, monkeypatch) -> None:
    opts, tmp = hostile
    monkeypatch.setenv("COLUMNS", "400")
    seen = {}
    for cmd in (["dead-letters"], ["metrics"], ["drift"], ["ab"], ["slices"], ["reference", "show"]):
        assert main([*opts, *cmd]) == 0, cmd
        seen[cmd[0] if cmd[0] != "reference" else "reference"] = capsys.readouterr().out
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in seen["dead-letters"]  # the payload, readable
    assert "[red]red[/red]" in seen["ab"] and "\\x1b[31m" in seen["ab"]  # markup shown as written, not applied
    assert "amo\\x1b[2Junt" in seen["drift"] and "amo\\x1b[2Junt" in seen["reference"]
    assert "FR\\x1b]0;title\\x07" in seen["slices"]
    assert VARIANT not in seen["metrics"] and "\\u202e" in seen["metrics"]


def test_report_files_hold_no_raw_control_characters(hostile, capsys, monkeypatch) -> None:
    opts, tmp = hostile
    monkeypatch.chdir(tmp)
    assert main([*opts, "report", "--week", "2026-W02", "--out", str(tmp / "reports"), "--json"]) == 0
    capsys.readouterr()
    for ext in ("md", "html"):
        text = (tmp / "reports" / f"report-fraud-2026-W02.{ext}").read_text()
        _check(text, ext)
    assert "amo\\x1b[2Junt" in (tmp / "reports" / "report-fraud-2026-W02.html").read_text()


def test_a_control_arm_named_like_a_closing_tag_is_shown_not_a_crash(tmp_path, capsys, monkeypatch) -> None:
    """Final tryout: `ab` ended in "unexpected MarkupError: closing tag '[/bold]' … doesn't match any open tag"
    when the control arm was named `[/bold]`: its escaped name went through repr() (`!r`), which doubled the escaping
    backslash and so un-escaped the tag."""
    monkeypatch.setenv("COLUMNS", "200")
    lines = []
    for i in range(200):
        variant = "[/bold]" if i % 2 else "B"
        lines.append(pred(f"p{i}", 0.8 if i % 5 == 0 else 0.2, T0 + i * 600, variant=variant))
        lines.append(outcome(f"p{i}", int(i % 5 == 0), T0 + i * 600 + 60))
    (tmp_path / "e.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"model": "fraud", "ab": {"control": "[/bold]", "arms": {"[/bold]": 0.5, "B": 0.5}}}))
    opts = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'm.db'}"]
    assert main([*opts, "replay", str(tmp_path / "e.jsonl")]) == 0
    capsys.readouterr()
    assert main([*opts, "ab", "--at", "2026-01-03"]) == 0
    out = capsys.readouterr().out
    assert "control arm '[/bold]'" in out


def test_every_invisible_or_format_character_is_escaped() -> None:
    """Hostile-user tryout: a zero-width space (and other format characters) passed `visible` as it was, so
    'fr\\u200baud' and 'fraud' looked the same. Every control (Cc), format (Cf), separator (Zl, Zp) and space but
    the ASCII one (Zs) of the running Python's Unicode tables is shown as an escape; printable text is kept."""
    import unicodedata

    missed = [hex(c) for c in range(0x110000)
              if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp", "Zs") and c != 0x20
              and visible(chr(c)) == chr(c)]
    assert not missed, missed
    assert visible("fr\u200baud") == "fr\\u200baud" and visible("\U000e0041") == "\\U000e0041"
    assert visible("a\xa0b\ufe0f") == "a\\xa0b\\ufe0f"
    assert visible("Zürich — café 北京 …") == "Zürich — café 北京 …"


def test_models_list_shows_look_alike_names_apart(tmp_path, capsys, monkeypatch) -> None:
    """Hostile-user tryout: `models list` showed 'fr\\u200baud' as 'fraud' (and a variant 'A\\u2060' as 'A'), two
    rows of what looked like one model; with a terminal escape in a name it emitted the escape."""
    monkeypatch.setenv("COLUMNS", "300")
    names = ["fraud", "fr\u200baud", "fraud\u202e", "fr\xa0aud", "x\x1b[2Jy"]
    lines = [pred(f"p{i}", 0.5, T0, model=m, variant="A\u2060") for i, m in enumerate(names)]
    (tmp_path / "e.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    opts = ["--db", f"sqlite:///{tmp_path / 'm.db'}"]
    with pytest.MonkeyPatch.context() as mp:
        before_name_rule(mp)
        assert main([*opts, "replay", str(tmp_path / "e.jsonl")]) == 0
    capsys.readouterr()
    assert main([*opts, "models", "list"]) == 0
    out = capsys.readouterr().out
    hidden = {c for c in "".join(names) + "\u2060" if not c.isascii() or c == "\x1b"}
    raw = sorted({hex(ord(c)) for c in out if c in hidden})
    assert not raw, raw
    for text in ("fr\\u200baud", "fraud\\u202e", "fr\\xa0aud", "x\\x1b[2Jy", "A\\u2060"):
        assert text in out, (text, out)
