"""Issue 13 part 4: a bad option, URL, window, config or name ends the CLI with one line `error: ...` (exit 2),
never a traceback; `--log-level debug` still shows the traceback to developers."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from driftline.cli import main
from helpers import outcome, pred

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
Run = Callable[..., subprocess.CompletedProcess[bytes]]  # the `run` fixture: driftline ARGS in-process


def cli(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m driftline.cli ARGS` in `cwd` (no DRIFTLINE_* settings leak in from the environment)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTLINE_")}
    env["COLUMNS"] = "200"
    return subprocess.run([sys.executable, "-m", "driftline.cli", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, timeout=120)  # type: ignore[call-overload]


@pytest.fixture
def run(capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
        ) -> Run:
    """`driftline ARGS` in `cwd` in-process through `driftline.cli.main` (what `cli` checks, without a new
    interpreter per call), as a CompletedProcess: the same environment as `cli` (COLUMNS=200, no DRIFTLINE_*), log
    records on the captured stderr as `logging.basicConfig` puts them in a process of its own (pytest's handlers
    set aside), and argparse's SystemExit as the exit code. For commands that neither read stdin nor may block."""
    for k in [k for k in os.environ if k.startswith("DRIFTLINE_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("COLUMNS", "200")

    def call(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
        monkeypatch.chdir(cwd)
        root = logging.getLogger()
        handlers, level = root.handlers[:], root.level
        root.handlers.clear()
        capsysbinary.readouterr()
        try:
            code = main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
        finally:
            for h in root.handlers:
                h.flush()
            root.handlers[:] = handlers
            root.setLevel(level)
        out = capsysbinary.readouterr()
        return subprocess.CompletedProcess(["driftline", *args], code, out.out, out.err)
    return call


def one_line_error(p: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit 2, no traceback, exactly one stderr line starting `error:` that names every needle."""
    err = p.stderr.decode() if isinstance(p.stderr, bytes) else p.stderr
    assert p.returncode == 2, (p.returncode, err)
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error:"), err
    for n in needles:
        assert n in lines[0], (n, err)
    return lines[0]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """--db of a SQLite file holding a few predictions and outcomes of model `fraud` (built once: the tests
    only read it, or are refused before writing)."""
    tmp_path = tmp_path_factory.mktemp("stored")
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    events = [pred(f"p{i}", 0.9 if i % 3 else 0.1, T0 + 60 * i) for i in range(20)]
    events += [outcome(f"p{i}", i % 2, T0 + 7200 + i) for i in range(20)]
    f = tmp_path / "events.jsonl"
    f.write_bytes(b"\n".join(events) + b"\n")
    p = cli(*db, "replay", str(f), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return db


def test_unknown_log_level(run: Run, tmp_path: Path) -> None:
    one_line_error(run("--log-level", "LOUD", "metrics", cwd=tmp_path), "--log-level", "LOUD", "debug")


@pytest.mark.parametrize("url, needle", [("mysql://x", "mysql"), ("postgresql+nosuchdriver://", "nosuchdriver"),
                                         ("not a url", "not a url")])
def test_unsupported_database_url(run: Run, tmp_path: Path, url: str, needle: str) -> None:
    line = one_line_error(run("--db", url, "metrics", cwd=tmp_path), "--db", needle)
    assert "sqlite" in line and "postgresql" in line  # says what is supported


def test_database_url_from_environment_is_named(tmp_path: Path) -> None:
    env_cli = subprocess.run([sys.executable, "-m", "driftline.cli", "metrics"], cwd=tmp_path, capture_output=True,
                             env={**os.environ, "DRIFTLINE_DB": "mysql://x"}, timeout=120)
    one_line_error(env_cli, "DRIFTLINE_DB", "mysql")


def test_debug_log_level_keeps_the_traceback(tmp_path: Path) -> None:
    p = cli("--log-level", "debug", "--db", "mysql://x", "metrics", cwd=tmp_path)
    assert p.returncode == 2
    assert b"Traceback" in p.stderr and b"error: --db" in p.stderr


@pytest.mark.parametrize("window", ["3000000d", "99999999999999d", "9" * 400 + "d", "40000w"])
def test_window_too_long(run: Run, tmp_path: Path, stored: list[str], window: str) -> None:
    line = one_line_error(run(*stored, "metrics", "--window", window, cwd=tmp_path), "--window", window)
    assert "whole number of buckets" not in line and "longer than" in line


@pytest.mark.parametrize("at", ["9999-12-31T23:30:00Z", "253402300799", "-1", "nan", "1e300", "10000-01-01"])
def test_at_extremes(run: Run, tmp_path: Path, stored: list[str], at: str) -> None:
    one_line_error(run(*stored, "metrics", f"--at={at}", cwd=tmp_path), "--at")


@pytest.mark.parametrize("command", ["drift", "ab", "calibration", "slices", "alerts evaluate"])
def test_at_at_the_end_of_time_in_every_window_command(run: Run, tmp_path: Path,
                                                       stored: list[str], command: str) -> None:
    one_line_error(run(*stored, *command.split(), "--at=9999-12-31T23:30:00Z", cwd=tmp_path), "--at")


def test_at_edges_inside_the_range_work(run: Run, tmp_path: Path, stored: list[str]) -> None:
    for at in ("1970-01-01T00:00:00Z", "0", "9998-12-31T00:00:00Z"):
        p = run(*stored, "metrics", "--at", at, "--window", "36500d", "--json", cwd=tmp_path)
        assert p.returncode == 0, p.stderr


def test_config_not_utf8(run: Run, tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_bytes(b"model: fr\xffaud\n")
    one_line_error(run("--config", "bad.yaml", "metrics", cwd=tmp_path), "bad.yaml", "UTF-8")


def test_config_window_too_long(run: Run, tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("window: 3000000d\n")
    one_line_error(run("--config", "c.yaml", "metrics", cwd=tmp_path), "window", "longer than")


def test_dead_letters_unknown_reason(run: Run, tmp_path: Path, stored: list[str]) -> None:
    line = one_line_error(run(*stored, "dead-letters", "--reason", "nosuch", cwd=tmp_path), "--reason", "nosuch")
    for reason in ("invalid_json", "score_out_of_range", "ts_in_future", "store_rejected"):
        assert reason in line
    ok = run(*stored, "dead-letters", "--reason", "ts_in_future", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr


def test_dead_letters_help_lists_the_reasons(run: Run, tmp_path: Path) -> None:
    out = run("dead-letters", "--help", cwd=tmp_path).stdout.decode()
    for reason in ("invalid_json", "nul_in_text", "store_rejected"):
        assert reason in out


def test_report_for_an_unknown_model(run: Run, tmp_path: Path, stored: list[str]) -> None:
    out = tmp_path / "reports"
    line = one_line_error(run(*stored, "report", "--model", "nosuchmodel", "--out", str(out), cwd=tmp_path),
                          "nosuchmodel", "fraud")
    assert "no predictions" in line
    assert not out.exists() or not any(out.iterdir())
    listed = run(*stored, "report", "--out", str(out), "--json", cwd=tmp_path)  # the stored model still works
    assert listed.returncode == 0, listed.stderr


# Commands kept in a process of their own (`cli`): `replay -` reads stdin, `serve` and `run` would block if the
# refusal under test broke (the subprocess's own timeout ends them).
PROCESS_ONLY = ("replay", "serve", "run")

TRIGGER_TYPO = """
triggers:
  - {name: recall_low, metric: recall, op: "<", value: 0.7}
  - {name: fpr_high, metric: fpr, op: ">", value: 0.08}
  - {name: typo, metric: recal, op: "<", value: 0.7}
"""


@pytest.mark.parametrize("command", [["metrics"], ["replay", "-"], ["serve", "--port", "0"],
                                     ["run", "--kafka", "127.0.0.1:1"], ["alerts"], ["report"]])
def test_trigger_metric_typo_fails_at_start(run: Run, tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "c.yaml").write_text(TRIGGER_TYPO)
    db = ["--db", f"sqlite:///{tmp_path / 'd.db'}"]
    args = ("--config", "c.yaml", *db, *command)
    p = cli(*args, cwd=tmp_path, stdin=b"") if command[0] in PROCESS_ONLY else run(*args, cwd=tmp_path)
    line = one_line_error(p,
                          "triggers[2].metric", "'recal'", "did you mean 'recall'")
    assert "c.yaml" in line
    assert not (tmp_path / "d.db").exists()  # refused before anything was opened


def test_unknown_trigger_metric_without_a_close_match_lists_the_known(run: Run, tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text('triggers: [{name: t, metric: zzzz, op: "<", value: 1}]\n')
    one_line_error(run("--config", "c.yaml", "metrics", cwd=tmp_path), "triggers[0].metric", "recall", "psi")


def test_event_text_in_an_error_is_escaped(run: Run, tmp_path: Path, stored: list[str]) -> None:
    p = run(*stored, "reference", "show", "--model", "m\x1b]0;pwned\x07\x1b[2J", cwd=tmp_path)
    line = one_line_error(p)
    assert "\x1b" not in line and "\x07" not in line and "\\x1b" in line


@pytest.mark.parametrize("text, needles", [
    ("threshhold: 0.5\n", ["unknown field `threshhold`", "did you mean `threshold`?"]),
    ("labels:\n  horizen: 30d\n", ["unknown field `labels.horizen`", "did you mean `labels.horizon`?"]),
    ("triggers:\n  - {name: x, metric: recall, op: '<', value: 0.5, windw: 7d}\n",
     ["unknown field `triggers[0].windw`", "did you mean `triggers[0].window`?"]),
])
def test_unknown_config_fields_are_named_in_full_with_a_hint(run: Run, tmp_path: Path,
                                                             text: str, needles: list[str]) -> None:
    (tmp_path / "c.yaml").write_text(text)
    line = one_line_error(run("--config", "c.yaml", "metrics", cwd=tmp_path), "c.yaml", *needles)
    assert re.match(r"error: config c\.yaml, line [12]: ", line) and line.count("error") == 1, line  # the key's line


@pytest.mark.parametrize("data, message", [
    ({"ab": {"arms": {"ctl": 0.5, "exp1": "zero"}}}, "invalid field `ab.arms.exp1`: Expected `float`, got `str` ('zero')"),
    ({"drift": {"psi_alert": -1}}, "invalid field `drift.psi_alert`: Expected `float` >= 0.0, got -1"),
])
def test_a_bad_value_is_named_by_its_key_and_shown(data: dict, message: str) -> None:
    """Second tryout: a bad arm share read `ab.arms[...]` (which arm?) and a negative PSI line did not show the value."""
    from driftline.config import ConfigError, from_dict

    with pytest.raises(ConfigError) as err:
        from_dict(data)
    assert str(err.value) == f"config: {message}"


@pytest.mark.parametrize("data, message", [
    ({"labels": {"policy": "implicit"}}, "invalid field `labels.policy`: 'implicit' is not one of 'explicit', "
     "'implicit_negative_after' (did you mean 'implicit_negative_after'?)"),
    ({"features": {"plan": "category"}}, "invalid field `features.plan`: 'category' is not one of 'categorical', "
     "'numeric' (did you mean 'categorical'?)"),
    ({"triggers": [{"name": "r", "metric": "recall", "op": "=<", "value": 0.7, "window": "7d"}]},
     "invalid field `triggers[0].op`: '=<' is not one of '<', '<=', '>', '>=' (did you mean '<='?)"),
    ({"drift": {"seasonality": "hourly"}}, "invalid field `drift.seasonality`: 'hourly' is not one of 'both', "
     "'day_of_week', 'hour_of_day', 'none'"),
])
def test_a_value_outside_an_enum_lists_the_allowed_values(data: dict, message: str) -> None:
    """Tryout: `labels: {policy: implicit}` and `features: {plan: category}` read only "Invalid enum value
    'implicit'": neither the allowed values nor the one meant."""
    from driftline.config import ConfigError, from_dict

    with pytest.raises(ConfigError) as err:
        from_dict(data)
    assert str(err.value) == f"config: {message}"


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["run", "--kafka", "127.0.0.1:1"], ["metrics"],
                                     ["replay", "-"]])
def test_a_sqlite_file_in_a_missing_folder_is_refused_at_start(run: Run, tmp_path: Path, command: list[str]) -> None:
    """`run` and `serve` waited for ever, retrying 'unable to open database file' every 15 s, for a SQLite path
    whose folder does not exist (a typo never becomes reachable); every command now refuses it at once."""
    db = tmp_path / "no" / "such" / "d.db"
    args = ("--db", f"sqlite:///{db}", *command)
    p = cli(*args, cwd=tmp_path, stdin=b"") if command[0] in PROCESS_ONLY else run(*args, cwd=tmp_path)
    one_line_error(p, "--db",
                   str(tmp_path / "no" / "such"), "does not exist")
    assert not (tmp_path / "no").exists()


def env_cli(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`driftline ARGS` with these DRIFTLINE_* settings (and no others from the environment)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTLINE_")}
    return subprocess.run([sys.executable, "-m", "driftline.cli", *args], cwd=tmp_path, capture_output=True,
                          env={**base, **env}, timeout=120)


def test_config_and_log_level_from_the_environment_are_named_in_their_errors(tmp_path: Path) -> None:
    """Tryout: DRIFTLINE_CONFIG=/nonexistent read 'config /nonexistent: cannot read it' with no word of where the
    path came from; DRIFTLINE_CONFIG= (set but empty) read 'config .: cannot read it: Is a directory';
    DRIFTLINE_LOG_LEVEL=loud was blamed on --log-level, an option nobody typed."""
    one_line_error(env_cli(tmp_path, {"DRIFTLINE_CONFIG": str(tmp_path / "nope.yaml")}, "metrics"),
                   "nope.yaml: cannot read it", "(the path given by env DRIFTLINE_CONFIG)")
    one_line_error(env_cli(tmp_path, {"DRIFTLINE_LOG_LEVEL": "loud"}, "metrics"), "env DRIFTLINE_LOG_LEVEL", "'loud'")
    one_line_error(env_cli(tmp_path, {}, "--config", "", "metrics"), "--config: empty")
    empty = env_cli(tmp_path, {"DRIFTLINE_CONFIG": "", "DRIFTLINE_DB": f"sqlite:///{tmp_path / 'x.db'}"}, "metrics")
    one_line_error(empty, "no database at")  # an empty variable counts as unset, as DRIFTLINE_DB's does
    assert "Is a directory" not in empty.stderr.decode()
    p = tmp_path / "c.yaml"
    p.write_text("model: fraud\n")  # the option wins over the variable
    given = env_cli(tmp_path, {"DRIFTLINE_CONFIG": str(tmp_path / "nope.yaml"), "DRIFTLINE_LOG_LEVEL": "loud"},
                    "--config", str(p), "--log-level", "info", "--db", f"sqlite:///{tmp_path / 'x.db'}", "metrics")
    one_line_error(given, "no database at")


def closed(tmp_path: Path, redirect: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`driftline ARGS` started with a standard stream closed (`redirect`: '<&-' or '>&-', as a shell does)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTLINE_")}
    command = " ".join([sys.executable, "-m", "driftline.cli", *args, redirect])
    return subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, env=base, timeout=120)


@pytest.mark.parametrize("args", [["replay", "-"], ["reference", "set", "--file", "-"]], ids=" ".join)
def test_reading_a_closed_stdin_is_one_error_line(tmp_path: Path, args: list[str]) -> None:
    """Tryout: `driftline replay - <&-` ended with 'error: unexpected AttributeError: 'NoneType' object has no
    attribute 'buffer'' (exit 1): Python sets sys.stdin to None when fd 0 is closed."""
    db = f"--db=sqlite:///{tmp_path / 'd.db'}"
    one_line_error(closed(tmp_path, "<&-", db, *args), "standard input is closed", "give the file's path")


def test_a_closed_stdout_is_no_traceback(run: Run, tmp_path: Path, stored: list[str]) -> None:
    """Tryout: `driftline metrics >&-` printed a Python traceback (AttributeError: 'NoneType' object has no
    attribute 'flush'). Now the output goes nowhere, as to a reader gone away, and the command does its work."""
    for args in (["metrics"], ["metrics", "--json"]):
        p = closed(tmp_path, ">&-", *stored, *args)
        assert p.returncode == 0 and b"Traceback" not in p.stderr and p.stderr == b"", p.stderr
    db = f"--db=sqlite:///{tmp_path / 'w.db'}"
    (tmp_path / "e.jsonl").write_bytes(pred("a", 0.9, T0) + b"\n")
    assert closed(tmp_path, ">&-", db, "replay", str(tmp_path / "e.jsonl")).returncode == 0
    assert b'"predictions": 1' in run(db, "metrics", "--json", cwd=tmp_path).stdout


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "latin-1"},
                                 {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}], ids=str)
def test_a_terminal_that_is_not_utf8_shows_non_ascii_names_escaped(run: Run, tmp_path: Path,
                                                                   env: dict[str, str]) -> None:
    """Tryout: with a model 'détection欺诈', `models list` and `metrics` on an ASCII or Latin-1 terminal ended with
    'unexpected UnicodeEncodeError' (exit 1); an error line already showed the name escaped."""
    db = f"--db=sqlite:///{tmp_path / 'u.db'}"
    (tmp_path / "e.jsonl").write_bytes(pred("a", 0.9, T0, model="détection欺诈") + b"\n")
    assert run(db, "replay", str(tmp_path / "e.jsonl"), cwd=tmp_path).returncode == 0
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DRIFTLINE_", "LC_", "LANG"))}
    for args in (["models", "list"], ["metrics"]):
        p = subprocess.run([sys.executable, "-m", "driftline.cli", db, *args], cwd=tmp_path, capture_output=True,
                           env={**base, "COLUMNS": "200", **env}, timeout=120)
        assert p.returncode == 0 and b"Error" not in p.stderr, p.stderr
        assert b"\\u6b3a\\u8bc8" in p.stdout, p.stdout


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:", "sqlite:///file::memory:?uri=true",
                                 "sqlite:///file:x?mode=memory&uri=true"])
def test_an_in_memory_database_is_refused_as_nothing_it_stores_would_last(run: Run, tmp_path: Path, url: str) -> None:
    """Tryout: `--db sqlite://` (or `database: "sqlite:///"`, a templated path left empty) replayed a file with exit
    0 and its summary of events stored — all gone when the command ended; `metrics` read 'no predictions stored'."""
    (tmp_path / "e.jsonl").write_bytes(pred("a", 0.9, T0) + b"\n")
    one_line_error(run("--db", url, "replay", str(tmp_path / "e.jsonl"), cwd=tmp_path), "--db", "in-memory",
                   "sqlite:///PATH")
    (tmp_path / "c.yaml").write_text(f'database: "{url}"\n')
    one_line_error(run("--config", str(tmp_path / "c.yaml"), "metrics", cwd=tmp_path), "config `database`",
                   "in-memory")


def test_a_report_folder_that_is_a_file_is_one_line_naming_the_option(run: Run, tmp_path: Path,
                                                                      stored: list[str]) -> None:
    """Tryout: `report --out FILE` ended with 'error: [Errno 17] File exists: …' (and `--out FILE/sub`: '[Errno 20]
    Not a directory'), after the report was built; the config's schedule.report_dir was not named."""
    (tmp_path / "afile").write_text("x")
    one_line_error(run(*stored, "report", "--out", str(tmp_path / "afile"), cwd=tmp_path),
                   "--out: ", "afile is a file, not a folder")
    line = one_line_error(run(*stored, "report", "--out", str(tmp_path / "afile" / "sub"), cwd=tmp_path),
                          "--out: ", "afile is a file, not a folder (in ")
    assert "Errno" not in line
    (tmp_path / "c.yaml").write_text(f"schedule: {{report_dir: '{tmp_path / 'afile'}'}}\n")
    one_line_error(run(*stored, "--config", str(tmp_path / "c.yaml"), "report", cwd=tmp_path),
                   "config schedule.report_dir: ", "is a file, not a folder")


@pytest.mark.parametrize("encoding, bom, name", [("utf-16", "FF FE", "UTF-16"), ("utf-16-be", None, "UTF-16"),
                                                 ("utf-32", "FF FE 00 00", "UTF-32")])
def test_a_utf16_file_is_refused_whole_with_how_to_convert_it(run: Run, tmp_path: Path, encoding: str, bom: str | None,
                                                              name: str) -> None:
    """Tryout: a UTF-16 export (Windows tools write one) was replayed line by line, each an invalid_json dead letter
    whose detail read 'invalid character at byte offset 0 near \\xff\\xfe{\\x00"\\x00t…'. Now one line, nothing stored."""
    text = (pred("a", 0.9, T0) + b"\n" + outcome("a", 1, T0 + 60) + b"\n").decode()
    data = text.encode(encoding) if bom else b"\xfe\xff" + text.encode(encoding)
    (tmp_path / "u16 x.jsonl").write_bytes(data)
    db = f"--db=sqlite:///{tmp_path / 'd.db'}"
    line = one_line_error(run(db, "replay", str(tmp_path / "u16 x.jsonl"), cwd=tmp_path), f"is {name} text",
                          f"byte-order mark {bom or 'FE FF'}", "nothing was stored")
    # pastes as shown; UTF-32 once got `iconv -f UTF-16`, whose output has a NUL after every character
    assert f"iconv -f {name} -t UTF-8 '{tmp_path / 'u16 x.jsonl'}'" in line
    one_line_error(cli(db, "replay", "-", cwd=tmp_path, stdin=data), f"standard input is {name}")
    assert b'"totals": {}' in run(db, "dead-letters", "--json", cwd=tmp_path).stdout


@pytest.mark.parametrize("args, says", [
    (["--days", "1e9"], "--days: must be more than 0 and at most 36525 (100 years), got 1e9"),
    (["--days", "inf"], "--days: must be more than 0 and at most 36525 (100 years), got inf"),
    (["--drift-day", "nan"], "--drift-day: must be a finite number of days, got nan"),
])
def test_simulate_refuses_days_it_cannot_simulate(tmp_path: Path, args: list[str], says: str) -> None:
    """Tryout: `simulate --days 1e9` ended in 'unexpected ValueError: year -2735881 is out of range' (exit 1),
    `--days inf` in an OverflowError, and `--drift-day nan` simulated no drift without a word."""
    one_line_error(cli("simulate", *args, "--per-day", "1", "--out", str(tmp_path / "e.jsonl"), cwd=tmp_path), says)


@pytest.mark.parametrize("args, says", [
    (["--evaluate-every", "0s"], "--evaluate-every: duration must be positive, got '0s'"),
    (["--evaluate-every", "1e400s"], "--evaluate-every: invalid duration '1e400s'"),
    (["--evaluate-every", "99999999d"], "--evaluate-every: 99999999d is longer than 36525d (100 years)"),
    (["--workdir", "afile"], "--workdir: "),
])
def test_demo_refuses_a_bad_step_or_workdir_before_any_work(tmp_path: Path, args: list[str], says: str) -> None:
    """Tryout: `demo --evaluate-every 0s` (and `1e400s`) ended in 'unexpected ValueError' (exit 1) after resetting
    the database; `--workdir FILE` in 'error: FILE: File exists' after it."""
    (tmp_path / "afile").write_text("x")
    line = one_line_error(cli(f"--db=sqlite:///{tmp_path / 'd.db'}", "demo", "--port", "0", *args, cwd=tmp_path), says)
    assert "is a file, not a folder" in line or "--workdir" not in line
    assert not (tmp_path / "d.db").exists()  # refused before the database was touched


def test_alerts_trigger_typo_is_refused_with_the_closest_name(run: Run, tmp_path: Path, stored: list[str]) -> None:
    """Tryout: `alerts --trigger recall_below_targt` printed 'no alert history for trigger recall_below_targt' (exit
    0): a typo read as a quiet trigger."""
    (tmp_path / "c.yaml").write_text("triggers:\n  - {name: recall_below_target, metric: recall, op: '<', "
                                     "value: 0.7}\n")
    one_line_error(run(*stored, "--config", str(tmp_path / "c.yaml"), "alerts", "--trigger", "recall_below_targt",
                       cwd=tmp_path), "--trigger: no trigger 'recall_below_targt'",
                   "did you mean 'recall_below_target'?")
    ok = run(*stored, "--config", str(tmp_path / "c.yaml"), "alerts", "--trigger", "recall_below_target",
             cwd=tmp_path)
    assert ok.returncode == 0 and b"no alert history for trigger recall_below_target" in ok.stdout
