"""The query commands' filters and their refusals (user tryout): a --variant or --model-version that names nothing
stored exits 2 with one line listing what is stored, instead of an all-empty table with exit 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftline.cli import main

from helpers import outcome, pred

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """--db of a database holding variant A (version v1) and variant B (version v2) of model fraud, labelled."""
    d = tmp_path_factory.mktemp("filters")
    lines = [pred(f"a{i}", 0.9 if i % 5 == 0 else 0.1, T0 + 60 * i, model_version="v1") for i in range(40)]
    lines += [pred(f"b{i}", 0.8 if i % 4 == 0 else 0.2, T0 + 60 * i, variant="B", model_version="v2")
              for i in range(40)]
    lines += [outcome(f"{v}{i}", int(i % 5 == 0), T0 + 3600 + 60 * i) for v in "ab" for i in range(40)]
    (d / "e.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    url = ["--db", f"sqlite:///{d / 'q.db'}"]
    assert main([*url, "replay", str(d / "e.jsonl")]) == 0
    return url


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.mark.parametrize("command", [["metrics"], ["drift"], ["calibration"],
                                     ["reference", "set", "--from", "2026-01-01", "--to", "2026-01-02"]])
def test_unknown_variant_exits_2_naming_the_stored_ones(db, capsys, command: list[str]) -> None:
    code, out, err = _run(capsys, *db, *command, "--variant", "b")
    assert code == 2 and out == ""
    assert err.splitlines() == ["error: --variant: no variant 'b' is stored for model 'fraud' (stored: 'A', 'B'; "
                                "did you mean 'B'?)"]


def test_unknown_model_version_exits_2_naming_the_stored_ones(db, capsys) -> None:
    code, out, err = _run(capsys, *db, "metrics", "--model-version", "nope")
    assert code == 2 and out == ""
    assert err.splitlines() == ["error: --model-version: no model version 'nope' is stored for model 'fraud' "
                                "(stored: 'v1', 'v2')"]


def test_variant_and_version_never_stored_together_exit_2(db, capsys) -> None:
    code, out, err = _run(capsys, *db, "metrics", "--variant", "A", "--model-version", "v2")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "variant 'A'" in err and "(its versions: 'v1')" in err


def test_stored_filters_are_read_and_named_in_the_header(db, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = _run(capsys, *db, "metrics", "--variant", "B", "--model-version", "v2")
    assert code == 0
    assert "· variant B · version v2" in out.splitlines()[0]
    code, out, _ = _run(capsys, *db, "metrics", "--model-version", "v1")
    assert code == 0 and out.splitlines()[0].endswith("· version v1")
    assert "labelled=40 of predictions=40" in out


def test_a_misspelled_variant_version_or_model_gets_the_closest_stored_name(tmp_path: Path, capsys) -> None:
    """Tryout: only a name differing in case got a "did you mean" (`--variant chalenger` got none)."""
    lines = [pred(f"{v}{i}", 0.5, T0 + i, variant=v, model_version=mv)
             for i in range(3) for v, mv in (("control", "2024.1"), ("challenger", "2024.2-rc"))]
    (tmp_path / "e.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    db = ["--db", f"sqlite:///{tmp_path / 'v.db'}"]
    assert main([*db, "replay", str(tmp_path / "e.jsonl")]) == 0
    for option, typo, meant in (("--variant", "chalenger", "challenger"), ("--variant", "Contrl", "control"),
                                ("--model-version", "2024.2rc", "2024.2-rc"), ("--model", "frud", "fraud")):
        code, _, err = _run(capsys, *db, "metrics", option, typo)
        assert code == 2 and err.startswith(f"error: {option}: ") and err.endswith(f"; did you mean '{meant}'?)\n")
    code, _, err = _run(capsys, *db, "metrics", "--variant", "zzz")
    assert code == 2 and "did you mean" not in err
