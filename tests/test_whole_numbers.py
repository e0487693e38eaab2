"""Every whole-number option reads its value one way (hostile tryout: `simulate --per-day 1e3` was refused while
`--at 1e9` was accepted, `--seed -1` ended in an unexpected ValueError, `alerts --limit 99999999999999999999` and
`reference show --id 99999999999999999999` in an unexpected OverflowError, `alerts --limit -5` listed everything)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from driftline.cli import build_parser, main


def actions(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.Action]]:
    """(command path, action) of every option and argument of `parser` and its subcommands."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for path, inner in actions(sub):
                    yield f"{name} {path}".strip(), inner
        else:
            yield "", action


def test_no_option_parses_with_bare_int() -> None:
    """`type=int` refuses 1e3 and lets 10**20 through to the database: whole numbers go through context.whole."""
    bare = [f"{path} {'/'.join(a.option_strings) or a.dest}" for path, a in actions(build_parser()) if a.type is int]
    assert bare == []


@pytest.mark.parametrize("argv, dest, value", [
    (["simulate", "--per-day", "1e3"], "per_day", 1000),
    (["simulate", "--per-day", "1.5e3"], "per_day", 1500),
    (["simulate", "--per-day", "1000.0"], "per_day", 1000),
    (["simulate", "--per-day", "2.147483647e9"], "per_day", 2_147_483_647),
    (["simulate", "--seed", "1e3"], "seed", 1000),
    (["simulate", "--seed", "0"], "seed", 0),
    (["replay", "-", "--batch-size", "2E4"], "batch_size", 20_000),
    (["dead-letters", "--limit", "1e1"], "limit", 10),
    (["alerts", "--limit", "2e1"], "limit", 20),
    (["reference", "show", "--id", "1e0"], "id", 1),
    (["reference", "activate", "3e0"], "id", 3),
    (["ab", "--seed", "1e2"], "seed", 100),
    (["serve", "--port", "8.08e3"], "port", 8080),
])
def test_exponent_notation_naming_a_whole_number_is_accepted(argv: list[str], dest: str, value: int) -> None:
    got = getattr(build_parser().parse_args(argv), dest)
    assert got == value and type(got) is int


@pytest.mark.parametrize("argv, line", [
    (["simulate", "--per-day", "2.5"], "error: --per-day: '2.5' is not a whole number"),
    (["simulate", "--per-day", "1e-3"], "error: --per-day: '1e-3' is not a whole number"),
    (["simulate", "--per-day", "3e9"], "error: --per-day: must be 1 to 2,147,483,647, got 3e9"),
    (["simulate", "--per-day", "1e999999999"], "error: --per-day: must be 1 to 2,147,483,647, got 1e999999999"),
    (["simulate", "--per-day", "nan"], "error: --per-day: 'nan' is not a number"),
    (["simulate", "--seed", "-1"], "error: --seed: must be 0 to 2,147,483,647, got -1"),
    (["ab", "--seed", "0.5"], "error: --seed: '0.5' is not a whole number"),
    (["alerts", "--limit", "0"], "error: --limit: must be 1 to 2,147,483,647, got 0"),
    (["alerts", "--limit", "-5"], "error: --limit: must be 1 to 2,147,483,647, got -5"),
    (["alerts", "--limit", "99999999999999999999"],
     "error: --limit: must be 1 to 2,147,483,647, got 99999999999999999999"),
    (["reference", "show", "--id", "99999999999999999999"],
     "error: --id: must be 1 to 2,147,483,647, got 99999999999999999999"),
    (["dead-letters", "--limit", "1.5"], "error: --limit: '1.5' is not a whole number"),
    (["serve", "--port", "7e4"], "error: --port: port 7e4 is outside 0..65535"),
    (["reference", "activate", "2.5"], "error: id: '2.5' is not a whole number"),  # a positional: one line too
    (["reference", "activate", "99999999999999999999"],
     "error: id: must be 1 to 2,147,483,647, got 99999999999999999999"),
    (["dead-letters", "--limit", "1_000"], "error: --limit: '1_000' is not a number"),  # tryout: taken as 1000
    (["dead-letters", "--limit", "\uff15"], "error: --limit: '\uff15' is not a number"),  # a fullwidth 5, taken as 5
    (["dead-letters", "--limit", "9" * 5000],  # tryout: the error line echoed all 5,000 digits
     "error: --limit: must be 1 to 2,147,483,647, got 99999999999999999999…99999999 (5,000 characters)"),
])
def test_a_fraction_or_out_of_range_whole_number_is_one_error_line(tmp_path, capsys, argv: list[str],
                                                                   line: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--db", f"sqlite:///{tmp_path / 'd.db'}", *argv])
    assert exit_.value.code == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.splitlines() == [line]


@pytest.mark.parametrize("argv, line", [
    (["--partitions", "0"], "error: --partitions: must be 1 to 2,147,483,647, got 0"),
    (["--partitions", "-3"], "error: --partitions: must be 1 to 2,147,483,647, got -3"),
    (["--partitions", "2.5"], "error: --partitions: '2.5' is not a whole number"),
    (["--replication-factor", "0"], "error: --replication-factor: must be 1 to 32,767, got 0"),
    (["--replication-factor", "-1"], "error: --replication-factor: must be 1 to 32,767, got -1"),
    (["--replication-factor", "40000"], "error: --replication-factor: must be 1 to 32,767, got 40000"),
])
def test_topics_create_refuses_a_bad_count_before_contacting_kafka(monkeypatch, capsys, argv: list[str],
                                                                   line: str) -> None:
    """Hostile tryout: `topics create --partitions 0` (or -3, --replication-factor 0) first tried the broker and
    ended, seconds later, in "Kafka at ... unreachable" (exit 1), never naming the option."""
    def no_network(settings: object) -> None:
        raise AssertionError("contacted Kafka")

    monkeypatch.setattr("driftline.kafka.topics.open_admin", no_network)
    with pytest.raises(SystemExit) as exit_:
        main(["topics", "create", "--kafka", "127.0.0.1:1", *argv])
    assert exit_.value.code == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.splitlines() == [line]


def test_topics_create_reads_exponent_notation() -> None:
    args = build_parser().parse_args(["topics", "create", "--partitions", "6e0", "--replication-factor", "3.0"])
    assert (args.partitions, args.replication_factor) == (6, 3)


def test_an_unknown_command_still_shows_the_usage(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["topics", "bogus"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith("usage: driftline topics") and "invalid choice: 'bogus'" in err


def test_kafka_unreachable_is_one_error_line_at_80_columns(monkeypatch, capsys) -> None:
    """It was wrapped ("... Unable to bootstrap" / "from ['127.0.0.1:1']") on a narrow stderr."""
    def unreachable(settings: object) -> None:
        raise OSError("Unable to bootstrap from ['127.0.0.1:1'] after trying every address for a long while")

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr("driftline.kafka.topics.open_admin", unreachable)
    assert main(["topics", "create", "--kafka", "127.0.0.1:1", "--partitions", "6"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: Kafka at 127.0.0.1:1 unreachable: ") and len(lines[0]) > 80
