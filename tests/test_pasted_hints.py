"""Hostile-user tryout: commands the CLI suggests (`models forget NAME --yes`, `dead-letters … --model M --raw |
driftline replay -`, `reference set --model M`, `pass --model M`) and closest-name suggestions put the name in
unquoted, so a model named `fraud model`, `a;b` or `x'y` gave a command that split the name or ran another
command when pasted. Each hint is read back as a shell would (shlex, `;` and `|` ending a word) and must give the name exactly."""

from __future__ import annotations

import re
import shlex

import msgspec
import pytest

from driftline import cli
from driftline.commands.which_model import did_you_mean, file_models
from driftline.readouts.references import NoReference

NAMES = ["fraud model", "a;b", "x'y", "$(touch pwned)", "[red]r"]
END = 1_795_996_800.0
_enc = msgspec.json.Encoder()


def _pred(pid: str, model: str) -> bytes:
    return _enc.encode({"type": "prediction", "prediction_id": pid, "model": model, "ts": END - 3 * 86400,
                        "score": 0.7})


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, " ".join(out.split()), " ".join(err.split())  # joined where the console wrapped it


def _split(command: str) -> list[str]:
    """`command` split into words as a shell splits it: `;`, `|`, `(`, `&` … end a word (shlex.split alone keeps
    `a;b` one word)."""
    lex = shlex.shlex(command, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    return list(lex)


def _hint(text: str, start: str) -> list[str]:
    """The backticked command in `text` that starts with `start`, split as a shell splits it."""
    m = re.search(r"`(" + re.escape(start) + r"[^`]*)`", text)
    assert m, f"no `{start}…` hint in: {text}"
    return _split(m.group(1))


def _after(words: list[str], option: str) -> str:
    return words[words.index(option) + 1]


@pytest.mark.parametrize("name", NAMES)
def test_models_hints_paste_as_the_name(tmp_path, capsys, monkeypatch, name: str) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("limits:\n  max_models: 1\n")
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'm.db'}"]
    (tmp_path / "e.jsonl").write_bytes(b"\n".join([_pred("j", "junk"), _pred("p1", name), _pred("p2", name)]) + b"\n")
    assert _cli(capsys, *base, "replay", str(tmp_path / "e.jsonl"))[0] == 0

    code, out, _ = _cli(capsys, *base, "models", "forget", "junk")
    words = _hint(out, "driftline models forget")
    assert code == 1 and words == ["driftline", "models", "forget", "junk", "--yes"]
    assert _cli(capsys, *base, "models", "forget", "junk", "--yes")[0] == 0
    (tmp_path / "n.jsonl").write_bytes(_pred("p3", name) + b"\n")  # admitted now: its refused events wait
    assert _cli(capsys, *base, "replay", str(tmp_path / "n.jsonl"))[0] == 0

    code, out, _ = _cli(capsys, *base, "models", "list")
    words = _hint(out, "driftline dead-letters")
    assert code == 0 and _after(words, "--model") == name, out
    assert words[words.index("|"):] == ["|", "driftline", "replay", "-"]

    code, out, _ = _cli(capsys, *base, "models", "forget", name)
    assert code == 1 and _hint(out, "driftline models forget")[3:] == [name, "--yes"], out


@pytest.mark.parametrize("name", NAMES)
def test_suggested_names_paste_as_the_name(name: str) -> None:
    hint = did_you_mean(name + "x", [name, "zzzzzzzzzzzzzzzz"])
    suggested = re.fullmatch(r"; did you mean (.*)\?", hint)
    assert suggested and _split(suggested.group(1)) == [name], hint
    assert _after(_split(str(NoReference(name)).split("`")[3]), "--model") == name
    assert _split(file_models({name}).split("pass ")[1].rstrip(")")) == ["--model", name]


def test_a_mistyped_raw_model_suggests_the_stored_name_quoted(tmp_path, capsys) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("limits:\n  max_models: 1\n")
    base = ["--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'm.db'}"]
    (tmp_path / "e.jsonl").write_bytes(b"\n".join([_pred("j", "junk"), _pred("p1", "x'yz")]) + b"\n")
    assert _cli(capsys, *base, "replay", str(tmp_path / "e.jsonl"))[0] == 0
    code, _, err = _cli(capsys, *base, "dead-letters", "--reason", "model_limit", "--model", "x'y", "--raw")
    suggested = re.search(r"did you mean (.*?)\?\)", err)
    assert code == 0 and suggested and _split(suggested.group(1)) == ["x'yz"], err
