"""New-user tryout: a junk model named 'evil\\x1b[31mRED' (stored before names with control characters were refused
at decode) could not be forgotten by typing its name as `models list` shows it ("no model … did you mean
'evil\\x1b[31mRED'?", the very text refused), and the printed hints, pasted, named a model with a literal
backslash. Now `models forget` takes the shown form of exactly one stored name, saying so, and every hint for such
a name is `$'…'`, which a shell turns back into the name."""

from __future__ import annotations

import re
import shlex
import subprocess

import msgspec
import pytest

from driftline import cli
from driftline.core import decode_many as dm
from driftline import name_rule as names
from driftline.storage.store import Store
from driftline.terminal import quoted_name, shell_word, shown_as, visible

END = 1_795_996_800.0
_enc = msgspec.json.Encoder()
EVIL = "evil\x1b[31mRED"
ODD = [EVIL, "a\xa0b", "x'y\\z\x07", "fr\u200baud", "tab\there", "a\U000e0041", "\x85c1", " m ", "m", "it's"]


def _bash_word(word: str, locale: str = "C.UTF-8") -> str:
    """What bash makes of `word` pasted as an argument."""
    return subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True,
                          env={"LANG": locale, "LC_ALL": locale}).stdout.decode()


@pytest.mark.parametrize("name", ODD)
def test_hints_paste_in_bash_as_the_name_itself(name):
    assert _bash_word(shell_word(name)) == name
    assert _bash_word(quoted_name(name)) == name
    assert "\x1b" not in shell_word(name) and visible(shell_word(name)) == shell_word(name)  # still safe to print


def _db_with(tmp_path, capsys, monkeypatch, models: list[str]) -> list[str]:
    """A database holding `models`, as one written before decode refused such names."""
    monkeypatch.setattr(names, "bad_name", lambda _: False)
    monkeypatch.setattr(dm, "bad_name", lambda _: False)
    base = ["--db", f"sqlite:///{tmp_path / 'm.db'}"]
    lines = [_enc.encode({"type": "prediction", "prediction_id": f"p{i}", "model": m, "ts": END - 86400,
                          "score": 0.5}) for i, m in enumerate(models)]
    (tmp_path / "e.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    assert cli.main([*base, "replay", str(tmp_path / "e.jsonl")]) == 0
    monkeypatch.undo()
    monkeypatch.setenv("COLUMNS", "400")
    capsys.readouterr()
    return base


def _run(capsys, *argv):
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, " ".join(out.split()), " ".join(err.split())


def _stored(tmp_path) -> set[str]:
    store = Store(f"sqlite:///{tmp_path / 'm.db'}")
    try:
        return set(store.models())
    finally:
        store.close()


def test_forget_takes_the_name_as_shown_and_its_hint_pastes(tmp_path, capsys, monkeypatch):
    base = _db_with(tmp_path, capsys, monkeypatch, [EVIL, "m"])
    typed = visible(EVIL)  # 'evil\x1b[31mRED' with a literal backslash, as models list shows it
    assert typed != EVIL and typed in _run(capsys, *base, "models", "list")[1]
    code, out, err = _run(capsys, *base, "models", "forget", typed)
    assert code == 1, err
    assert "taking it as the stored model shown so, $'evil\\x1b[31mRED'" in err
    hint = re.search(r"`driftline models forget (\S+) --yes`", out)
    assert hint and _bash_word(hint.group(1)) == EVIL, out
    code, out, err = _run(capsys, *base, "models", "forget", typed, "--yes")
    assert code == 0 and _stored(tmp_path) == {"m"}


def test_an_unknown_name_suggests_a_control_character_name_pastably(tmp_path, capsys, monkeypatch):
    base = _db_with(tmp_path, capsys, monkeypatch, [EVIL, "m"])
    code, _, err = _run(capsys, *base, "models", "forget", "evil[31mRED")
    suggested = re.search(r"did you mean (.*?)\?\)", err)
    assert code == 2 and suggested and _bash_word(suggested.group(1)) == EVIL, err


def test_a_shown_form_of_two_stored_names_is_refused_naming_each(tmp_path, capsys, monkeypatch):
    one, two = "a\x1b\\x1b", "a\\x1b\x1b"  # both shown as a\x1b\x1b
    base = _db_with(tmp_path, capsys, monkeypatch, [one, two])
    code, _, err = _run(capsys, *base, "models", "forget", visible(one))
    assert code == 2 and "2 stored models are shown so" in err, err
    assert _stored(tmp_path) == {one, two}


def test_a_name_with_surrounding_spaces_forgets_itself_not_the_trimmed_one(tmp_path, capsys, monkeypatch):
    """Stored before the decode rule: the `--yes` hint for ' m ' must delete ' m ', not 'm'."""
    base = _db_with(tmp_path, capsys, monkeypatch, [" m ", "m"])
    code, out, _ = _run(capsys, *base, "models", "forget", " m ")
    hint = re.search(r"`(driftline models forget .*? --yes)`", out)
    assert code == 1 and hint, out
    words = shlex.split(hint.group(1))
    assert words[3] == " m " and _bash_word(shell_word(" m ")) == " m "
    assert _run(capsys, *base, *words[1:])[0] == 0
    assert _stored(tmp_path) == {"m"}


@pytest.mark.parametrize("name", ["\ufeffm", "a\xa0b", "fr\u200baud", "x'y\\z\u202e"])
def test_a_hint_pasted_in_a_c_locale_still_names_the_model(name):
    """Tryout: in a C/POSIX locale bash expands `$'\\ufeffm'` to the text `\\uFEFFm` (upper-case hex, and
    `$'a\\u00a0b'` to `a\\u00A0b` where `models list` shows `a\\xa0b`), which the shown-name fallback refused.
    (Bash there drops a `\\U000e0041` outright: nothing to match.)"""
    typed = _bash_word(shell_word(name), "C")
    assert typed != name and shown_as(typed, [name, "m", "ab"]) == [name]


def test_escapes_typed_back_match_in_either_case_and_literal_backslashes_still_match():
    assert shown_as("fr\\u200Baud", ["fr\u200baud", "fraud"]) == ["fr\u200baud"]
    assert shown_as("a\\X1b", ["a\x1b"]) == []  # \X is no escape
    literal = "a\\xAB\x1b"  # a backslash, 'xAB', then an ESC: shown as a\xAB\x1b
    assert shown_as(visible(literal), [literal]) == [literal]


def test_forget_takes_a_c_locale_paste_of_its_own_hint(tmp_path, capsys, monkeypatch):
    base = _db_with(tmp_path, capsys, monkeypatch, ["\ufeffm", "m"])
    code, out, _ = _run(capsys, *base, "models", "forget", "\ufeffm")
    hint = re.search(r"`driftline models forget (\S+) --yes`", out)
    assert code == 1 and hint, out
    typed = _bash_word(hint.group(1), "C")
    assert typed == "\\uFEFFm"
    code, _, err = _run(capsys, *base, "models", "forget", typed, "--yes")
    assert code == 0 and "taking it as the stored model shown so" in err, err
    assert _stored(tmp_path) == {"m"}
