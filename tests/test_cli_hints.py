"""A misspelt command or option gets the closest one named (tryout: `driftline metrcs` listed all 17 commands,
`metrics --windw 7d` said only `unrecognized arguments`, `--confg c.yaml metrics` took c.yaml for the command)."""

from __future__ import annotations

import pytest

from driftline.cli import main


@pytest.mark.parametrize(("argv", "hint"), [
    (["metrcs"], "(did you mean 'metrics'?)"),
    (["reference", "shw"], "(did you mean 'show'?)"),
    (["metrics", "--json", "--windw", "7d"], "unrecognized arguments: --windw 7d (unknown option --windw: did you "
                                             "mean --window?)"),
    (["metrics", "--windw=7d"], "(unknown option --windw: did you mean --window?)"),
    (["reference", "set", "--frm", "2026-01-01"], "(unknown option --frm: did you mean --from?)"),
    (["--confg", "c.yaml", "metrics"], "invalid choice: 'c.yaml' (choose from 'replay', "),
    (["--confg", "c.yaml", "metrics"], "(unknown option --confg: did you mean --config?)"),
])
def test_a_misspelt_command_or_option_names_the_closest(tmp_path, capsys, argv: list[str], hint: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exit_:
        main(["--db", f"sqlite:///{tmp_path / 'd.db'}", *argv])
    assert exit_.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("driftline") and hint in last


@pytest.mark.parametrize("argv", [["xyz"], ["metrics", "extra"], ["metrics", "-w"]])
def test_nothing_close_gets_no_hint(tmp_path, capsys, argv: list[str]) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit):
        main(["--db", f"sqlite:///{tmp_path / 'd.db'}", *argv])
    assert "did you mean" not in capsys.readouterr().err
