"""Terminal output: one number format everywhere, tables that fit 80/100/120 columns on one line per row,
dead-letter line numbers, help text for every option."""

from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, strategies as st
from rich.console import Console

from driftline import numbers
from driftline.cli import build_parser, main
from driftline.core.events import iso

EXAMPLE = str(Path(__file__).resolve().parents[1] / "driftline.example.yaml")
END = "2026-11-30T00:00:00Z"


# --- the number format ---------------------------------------------------------------------------------
@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.integers(1, 10**9), st.booleans())
def test_rate_reads_back_as_the_rounded_numbers(v: float, a: float, b: float, n: int, ind: bool) -> None:
    lo, hi = min(a, b), max(a, b)
    s = numbers.rate({"value": v, "low": lo, "high": hi, "n": n, "indicative": ind})
    m = re.fullmatch(r"(\d\.\d{3}) \[(\d\.\d{3}), (\d\.\d{3})\] n=([\d,]+)(\*?)", s)
    assert m, s
    assert [float(x) for x in m.groups()[:3]] == [round(v, 3), round(lo, 3), round(hi, 3)] or \
        all(abs(float(x) - y) <= 0.0005 + 1e-12 for x, y in zip(m.groups()[:3], (v, lo, hi)))
    assert int(m.group(4).replace(",", "")) == n and (m.group(5) == "*") == ind
    assert re.fullmatch(r"\d{1,3}(,\d{3})*", m.group(4))


@given(st.floats(-1e9, 1e9), st.floats(0, 1e9))
def test_money_has_thousands_separators_and_its_interval(v: float, w: float) -> None:
    s = numbers.money(v, v - w, v + w)
    head, _, iv = s.partition(" [")
    m = max(abs(v), abs(v - w), abs(v + w))
    places = 0 if m >= 100 else 2 if m >= 0.01 or m == 0 else None

    def num(text: str) -> float:
        assert "-" not in text, s  # the minus sign, never a hyphen
        return float(text.replace(",", "").replace("\u2212", "-"))

    if places is not None:
        assert abs(num(head) - v) <= 0.5 * 10 ** -places + 1e-6 * max(1, abs(v))
        assert re.fullmatch(r"\u2212?\d{1,3}(,\d{3})*(\.\d{2})?", head), s
        assert all(len(x.partition(".")[2]) == places for x in (head, *iv.rstrip("]").split(", ")))  # same decimals
    lo, hi = iv.rstrip("]").split(", ")
    assert num(lo) <= num(hi)


def test_formats_of_edge_values() -> None:
    assert numbers.rate({"value": None, "n": 0}) == "— (n=0)"
    assert numbers.rate({"value": 0.5879, "low": 0.5474, "high": 0.6273, "n": 550}) == "0.588 [0.547, 0.627] n=550"
    assert numbers.diff(0.0561, -0.0181, 0.1304) == "+0.056 [\u22120.018, 0.130]"
    assert numbers.money(623.17, -1130.36, 2376.7, signed=True) == "+623 [\u22121,130, 2,377]"
    assert numbers.money(12.345) == "12.35" and numbers.count(1234567) == "1,234,567"
    assert numbers.pvalue(0.00001) == "<0.0001" and numbers.pvalue(0.0321) == "0.032"
    assert numbers.duration(5400) == "1.5 h" and numbers.duration(None) == "—"
    assert numbers.indicative_used([{"value": 0.1, "indicative": True}])
    assert not numbers.indicative_used([{"value": None, "indicative": True}, {"value": 0.2, "indicative": False}])


# --- a database to render ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    d = tmp_path_factory.mktemp("layout")
    url = f"sqlite:///{d / 'x.db'}"
    events = d / "events.jsonl"
    base = ["--config", EXAMPLE, "--db", url]
    assert main(base + ["simulate", "--days", "21", "--per-day", "600", "--end", END, "--out", str(events),
                        "--drift-day", "14"]) == 0
    assert main(base + ["replay", str(events)]) == 0
    assert main(base + ["reference", "set", "--from", "2026-11-09T00:00:00Z", "--to", "2026-11-16T00:00:00Z"]) == 0
    for day in ("2026-11-20T00:00:00Z", "2026-11-25T00:00:00Z", END):
        assert main(base + ["alerts", "evaluate", "--at", day, "--no-notify"]) == 0
    return url


COMMANDS = [["metrics"], ["metrics", "--variant", "B"], ["ab"], ["alerts"], ["drift"], ["calibration"], ["slices"],
            ["dead-letters"], ["reference", "list"], ["reference", "show"]]


def _render(db: str, args: list[str], width: int, capsys: pytest.CaptureFixture[str],
            monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    assert main(["--config", EXAMPLE, "--db", db] + args) == 0
    return capsys.readouterr().out


def _rows_whole(out: str, width: int) -> None:
    """Every table row is one physical line: no continuation line (first cell empty), no `…`, nothing wider."""
    for line in out.splitlines():
        if not line.startswith(("│", "┃", "┏", "└")):
            continue  # running text (notes, payload previews) wraps between words as text does
        assert len(line) <= width, line
        assert "…" not in line, out
        if line.startswith("│") and line.count("│") > 2:
            first = line.split("│")[1]
            assert first.strip(), f"a wrapped row at {width} columns:\n{out}"


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
@pytest.mark.parametrize("width", [80, 100, 120])
def test_tables_fit_one_line_per_row(db: str, args: list[str], width: int, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    out = _render(db, args, width, capsys, monkeypatch)
    _rows_whole(out, width)
    assert "recall_below_t…" not in out and "T00:…" not in out


@pytest.mark.parametrize("width", [80, 100, 120])
def test_essential_columns_remain_at_any_width(db: str, width: int, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    out = _render(db, ["alerts"], width, capsys, monkeypatch)
    for head in ("trigger", "state", "value [95 %]", "when", "transition"):
        assert head in out
    out = _render(db, ["ab"], width, capsys, monkeypatch)
    for head in ("diff [95 % Newcombe]", "p Holm", "recall", "FPR"):
        assert head in out
    out = _render(db, ["metrics"], width, capsys, monkeypatch)
    assert "value [95 % Wilson] n" in out and "recall" in out and "ROC AUC" in out
    assert ("not shown at 100 columns: counts" not in out) if width >= 100 else "counts" not in out.split("┃")[:6]


def test_same_rate_reads_the_same_in_metrics_ab_and_slices(db: str, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    doc = json.loads(_render(db, ["metrics", "--json"], 120, capsys, monkeypatch))
    arm_a = next(g for g in doc["by_variant"] if g["variant"] == "A")["metrics"]["recall"]
    text = numbers.rate(arm_a)
    assert text in _render(db, ["metrics"], 120, capsys, monkeypatch)
    assert text in _render(db, ["ab"], 120, capsys, monkeypatch)
    sl = json.loads(_render(db, ["slices", "--json"], 120, capsys, monkeypatch))
    out = _render(db, ["slices"], 200, capsys, monkeypatch)
    for feat in sl["features"]:
        for s in feat["values"]:
            assert numbers.rate(s["recall"]) in out
    # the old 4-place and percentage renderings of the same kind of value are gone
    assert not re.search(r"\d\.\d{4} \[\d\.\d{4}", out) and "% [" not in out


def test_indicative_footnote_only_when_a_row_uses_it(db: str, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for args in (["metrics"], ["metrics", "--variant", "B"], ["ab"], ["slices"], ["calibration"]):
        out = _render(db, args, 200, capsys, monkeypatch)
        stars = re.search(r"n=[\d,]+\*|\w\* ", out)
        assert ("indicative" in out) == bool(stars), (args, out)


# --- dead letters --------------------------------------------------------------------------------------
def test_dead_letter_lines_count_from_one(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}"
    good = ('{"type":"prediction","prediction_id":"p%d","model":"fraud","ts":"2026-11-01T00:00:00Z",'
            '"score":0.4,"threshold":0.5}')
    lines = [good % i for i in range(1, 977)] + ["{not json"] + [good % 2000]
    f = tmp_path / "e.jsonl"
    f.write_text("\n".join(lines) + "\n")
    (tmp_path / "none.jsonl").write_text("")  # an empty database (dead-letters refuses a file that does not exist)
    assert main(["--db", url, "replay", str(tmp_path / "none.jsonl")]) == 0
    capsys.readouterr()
    assert main(["--db", url, "dead-letters"]) == 0
    assert "no dead letters stored" in capsys.readouterr().out
    assert main(["--db", url, "dead-letters", "--reason", "invalid_json"]) == 0
    assert "no dead letters with reason invalid_json stored" in capsys.readouterr().out
    assert main(["--db", url, "replay", str(f)]) == 0
    assert lines[976] == "{not json"  # the 977th line
    out = _render(url, ["dead-letters"], 120, capsys, monkeypatch).replace(" ", "")
    assert "line977" in out.replace("│", " ").replace(" ", "")
    doc = json.loads(_render(url, ["dead-letters", "--json"], 120, capsys, monkeypatch))
    assert doc["recent"][0]["offset"] == 976  # JSON keeps the stored 0-based position
    letter = doc["recent"][0]  # the epoch float scripts read stays; the ISO time other JSON documents give is added
    assert isinstance(letter["received_at"], float)
    assert letter["received_at_iso"] == iso(float(int(letter["received_at"])))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", letter["received_at_iso"])


def test_kafka_dead_letters_keep_offsets() -> None:
    from driftline.commands.ingest import where

    assert where("predictions", 2, 1234) == "partition 2 offset 1,234"
    assert where("file:/x/e.jsonl", 0, 976) == "line 977" and where("stdin", 0, 0) == "line 1"


# --- help ----------------------------------------------------------------------------------------------
def _options(p: argparse.ArgumentParser, path: list[str]):  # type: ignore[no-untyped-def]
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in a._choices_actions}
            for name, sp in a.choices.items():
                yield path + [name], "(the subcommand)", helps.get(name)
                yield from _options(sp, path + [name])
        elif not isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
            yield path, "/".join(a.option_strings) or a.dest, a.help


def test_every_option_of_every_subcommand_has_help() -> None:
    missing = [f"{' '.join(p)} {o}" for p, o, h in _options(build_parser(), ["driftline"]) if not (h or "").strip()]
    assert missing == []


def test_top_level_help_describes_and_groups(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "watches a deployed binary classifier" in out and "commands by task" in out and "README.md" in out
    from driftline.core.events import DEAD_LETTER_REASONS

    with pytest.raises(SystemExit):
        main(["dead-letters", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert all(r in out for r in DEAD_LETTER_REASONS)
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "critical" in capsys.readouterr().out


# --- issue 17 §3 leftovers on the fraud database --------------------------------------------------------
ARM_MEASURES = ("predictions (share)", "labelled / positives", "recall", "FPR", "precision", "alert rate",
                "label coverage", "label delay p50 / p95", "cost / 1,000 (EUR)", "cost / month (EUR)")


@pytest.mark.parametrize("width", [80, 100, 120])
def test_ab_arms_show_every_measure(db: str, width: int, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    out = _render(db, ["ab"], width, capsys, monkeypatch)
    arms = out[out.index("arms ("):out.index("B − A")]
    _rows_whole(arms, width)
    for m in ARM_MEASURES:
        assert re.search(rf"│ {re.escape(m)} +│", arms), (m, arms)
    assert "not shown" not in arms
    heads = [line for line in arms.splitlines() if line.startswith("┃")]
    if width >= 100:  # both arms side by side, in one table
        assert len(heads) == 1 and re.search(r"┃ +A ┃ +B ┃", heads[0])
    else:
        assert len(heads) == 2


def test_demo_week_table_fits_80_columns(db: str) -> None:
    from driftline import config
    from driftline.commands.demo import summary
    from driftline.context import Context
    from driftline.core.events import parse_time_text

    buf = io.StringIO()
    ctx = Context(config=config.load(EXAMPLE), db_url=db, console=Console(file=buf, width=80),
                  err=Console(file=io.StringIO(), width=80))
    try:
        summary(ctx, ctx.config, ctx.store(), parse_time_text(END))
    finally:
        ctx.close()
    out = buf.getvalue()
    _rows_whole(out, 80)
    assert "7 days ending" in out and "00:00 UTC" in out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert len(rows) == 2 and all(re.search(r"n=[\d,]+ +│ +\d\.\d{3} \[.*n=[\d,]+\*? │$", r) for r in rows), out


def test_slice_tables_are_worst_first(db: str, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    doc = json.loads(_render(db, ["slices", "--json"], 120, capsys, monkeypatch))
    out = _render(db, ["slices"], 200, capsys, monkeypatch)
    for feat in doc["features"]:
        vals = feat["values"]
        key = [(v["shortfall"] is None, -(v["shortfall"] or 0.0), v["value"]) for v in vals]
        assert key == sorted(key) and len(vals) > 1
        table = out[re.search(rf"^{feat['feature']} *$", out, re.M).start():]  # type: ignore[union-attr]
        shown_order = [line.split("│")[1].strip().rstrip("*") for line in table.splitlines()
                       if line.startswith("│")][:len(vals)]
        assert shown_order == [v["value"] for v in vals]


def test_catch_all_bins_are_not_confused_with_a_category_named_other(db: str, capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    out = _render(db, ["reference", "show"], 1000, capsys, monkeypatch)
    line = next(x for x in out.splitlines() if x.strip().startswith("merchant_category:"))
    labels = line.split(":", 1)[1].strip().split(", ")
    assert len(labels) == len(set(labels)), line  # no label twice
    assert "other" in labels and labels[-2:] == ["(other)", "(missing)"]
    amount = next(x for x in out.splitlines() if x.strip().startswith("amount:"))
    assert amount.split(": ", 1)[1].startswith("(underflow), [") and "(overflow), (other), (missing)" in amount
    doc = json.loads(_render(db, ["drift", "--json"], 200, capsys, monkeypatch))
    text = json.dumps(doc)
    assert '"bin": "(other)"' in text and '"bin": "other"' in text  # the catch-all and the real category


def test_one_rule_for_the_formats_issue_17_found_inconsistent() -> None:
    """Issue 17 §3: each inconsistency the tryout found, now one rule (numbers.py)."""
    m = "\u2212"
    # ab verdict counts: "487/3754" -> thousands separators
    assert numbers.ratio(487, 3754) == "487/3,754"
    # money: the currency on every amount, separators, the same decimals inside the interval, the minus sign
    assert numbers.money(-2134.16, -4109.96, -158.35, currency="EUR") == f"{m}€2,134 [{m}€4,110, {m}€158]"
    assert numbers.money(5909, 4372, 7447, currency="EUR") == "€5,909 [€4,372, €7,447]"
    assert numbers.money(12.5, -3, 20, signed=True, currency="CHF") == f"+CHF 12.50 [{m}CHF 3.00, CHF 20.00]"
    assert numbers.money(0.002, currency="EUR") == "€0.0020"  # a cost per prediction is not "€0.00"
    assert numbers.money_interval(-4109.96, -158.35, "USD", -2134.16) == f"[{m}$4,110, {m}$158]"
    # one p-value rule: 2 significant digits everywhere ("0.0871" / "0.8550" in the report before)
    assert [numbers.pvalue(p) for p in (0.0871, 0.855, 0.05, 0.00023, 0.00001)] == \
        ["0.087", "0.85", "0.050", "0.00023", "<0.0001"]
    # signed errors: never "-0.000"; the minus sign, not a hyphen
    assert numbers.diff(-0.0001) == "0.000" and numbers.diff(0.565) == "+0.565" and numbers.diff(-0.012) == f"{m}0.012"
    assert numbers.prop(-0.0004) == "0.000" and numbers.stat(-0.00001) == "0.0000"
    assert numbers.percent(-0.05, signed=True) == f"{m}5.0 %"


def test_demo_event_lines_wrap_at_spaces_on_a_terminal_and_stay_one_line_in_a_file() -> None:
    """Tryout: the demo's ALERT line (121 cells at 120 columns) was left to the terminal to wrap, which left a
    stale progress frame above it; rich now wraps it at spaces on a terminal, and a file keeps one line."""
    from driftline.commands.demo import _event

    text = "2026-11-28T00:00:00Z  ALERT recall_below_target FIRING (critical): recall 0.456 [0.415, 0.498] " \
           "n=550 over 7d, line < 0.70"
    tty = io.StringIO()
    _event(Console(file=tty, width=80, force_terminal=True, color_system=None), text)
    rows = tty.getvalue().splitlines()
    assert len(rows) == 2 and all(len(r) <= 80 for r in rows)
    assert " ".join(rows).split() == text.split()  # broken at spaces only
    pipe = io.StringIO()
    _event(Console(file=pipe, width=80), text)
    assert pipe.getvalue() == text + "\n"


@pytest.mark.parametrize("args", [["metrics"], ["reference", "show"], ["ab"], ["alerts"]], ids=" ".join)
def test_titles_and_prose_take_the_console_width(db: str, args: list[str], capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A title wraps at the console's width, not the (narrower) table's; every line of prose fits the console,
    and a wrapped bin list continues indented under its feature."""
    out = _render(db, args, 80, capsys, monkeypatch)
    assert all(len(line) <= 80 for line in out.splitlines()), out
    if args == ["metrics"]:
        assert re.search(r"^fraud · \S+Z → \S+Z \(7d\)$", out, re.M), out
    if args == ["reference", "show"]:
        bins = out[out.index("tracked features"):].splitlines()
        bins = bins[next(n for n, line in enumerate(bins) if line.startswith("  ") and ": " in line):]
        assert all(line.startswith("  ") for line in bins if line.strip()), out


def test_history_of_unconfigured_triggers_reads_like_the_rest(db: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the config that defined them, the history's values keep the metric's format (0.588, not 0.5879),
    and the empty triggers table is one line saying so, not a header and a 'not shown' note."""
    bare = tmp_path / "bare.yaml"
    bare.write_text("model: fraud\n")
    monkeypatch.setenv("COLUMNS", "160")
    capsys.readouterr()
    assert main(["--config", str(bare), "--db", db, "alerts"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no triggers configured (see `triggers:`)\n") and "not shown" not in out, out
    values = re.findall(r"│ +(\d\.\d+ \[\d\.\d+, \d\.\d+\]) +│", out)
    assert values and all(re.fullmatch(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", v) for v in values), out
    assert main(["--config", str(bare), "--db", db, "alerts", "evaluate", "--no-notify", "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("no triggers configured")


def test_maturity_periods_read_as_durations_in_words(db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`131h by label_delay_p95` read as neither a duration nor words: numbers.duration and the method in words,
    in the calibration readout and in the HTML/Markdown report."""
    out = _render(db, ["calibration"], 160, capsys, monkeypatch)
    assert "one maturity period earlier:" in out and "by the 95th-percentile label delay" in out, out
    assert "label_delay_p95" not in out and not re.search(r"\d+h\b", out), out
    assert re.search(r"earlier: \d+(\.\d)? [dh] by the", out), out
    assert main(["--config", EXAMPLE, "--db", db, "report", "--out", str(tmp_path)]) == 0
    for page in [*tmp_path.glob("*.html"), *tmp_path.glob("*.md")]:
        text = page.read_text()
        assert "label_delay_p95" not in text and "95th-percentile label delay" in text, page


def test_top_level_help_lists_each_command_once_in_its_group(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "positional arguments" not in out, out
    groups = out[out.index("commands by task"):out.index("options:")]
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name in sub.choices:
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", groups), name
        assert not re.search(rf"^\s+{re.escape(name)}\s{{2,}}", out.replace(groups, ""), re.M), name  # listed once
    alerts = next(a for a in sub.choices["alerts"]._actions if isinstance(a, argparse._SubParsersAction))
    for name in alerts.choices:
        assert f"alerts {name}" in " ".join(groups.split()), name


def test_demo_event_lines_print_above_a_live_progress_bar_not_over_it() -> None:
    """Second tryout: the ALERT line went to stdout around rich's live display and landed on the bar's line
    ('… 0:00:02 left2026-11-28T00:00:00Z  ALERT …'); while the bar is live it prints through the bar's console."""
    from driftline.commands.demo import _event
    from driftline.commands.progress import IngestProgress

    err, out = io.StringIO(), io.StringIO()
    term = Console(file=err, width=80, force_terminal=True, color_system=None)
    bar = IngestProgress(term, "simulate + ingest", 100.0, lambda: 0.0)
    with bar:
        bar.update(50.0)
        _event(Console(file=out, width=80, force_terminal=True), "recall_below_target FIRING", "2026-11-28  ALERT ",
               bar)
    assert out.getvalue() == ""
    assert "2026-11-28  ALERT recall_below_target FIRING" in err.getvalue()
