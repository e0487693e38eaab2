"""Issue 17 §3 leftovers: rows never wrap (blocks when even the essential columns do not fit), a free-text column
cut only inside its cell, the replay progress line fitted to 80–120 columns, slices worst first, unambiguous
catch-all bins, simulated ids unique per seed."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from rich.console import Console

from churn_sim import write_churn
from driftline.cli import main
from driftline.commands.tables import Col, print_table
from driftline.core.events import parse_time_text
from driftline.core.stats import NEG, POS

LONG = ["churn_recall_below_retention_target", "churn_false_positive_rate_above_budget",
        "treatment_arm_precision_below_floor_for_campaign"]


def _rows_whole(out: str, width: int) -> None:
    """As test_terminal_layout: every table line fits, no `…`, no continuation line (first cell empty)."""
    for line in out.splitlines():
        if not line.startswith(("│", "┃", "┏", "└", "┌", "├")):
            continue
        assert len(line) <= width, line
        assert "…" not in line, out
        if line.startswith("│") and line.count("│") > 2:
            assert line.split("│")[1].strip(), f"a wrapped row at {width} columns:\n{out}"


def _print(width: int, cols: list[Col], rows: list[list[str]]) -> str:
    buf = io.StringIO()
    print_table(Console(file=buf, width=width, force_terminal=False), cols, rows, title="t")
    return buf.getvalue()


# --- 1. never a wrapped row ----------------------------------------------------------------------------
def test_rows_become_blocks_when_even_the_essential_columns_do_not_fit() -> None:
    cols = [Col("trigger", "left"), Col("severity", "left", drop=2), Col("state", "left"), Col("value [95 %]"),
            Col("n")]
    rows = [[name, "critical", "ok", "0.770 [0.671, 0.846]", "87"] for name in LONG]
    wide = _print(120, cols, rows)
    assert all(f"│ {name} " in wide for name in LONG) and "severity" in wide  # one row a line
    out = _print(80, cols, rows)
    _rows_whole(out, 80)
    for name in LONG:  # each trigger whole, with its essential cells, on lines of its own block
        assert re.search(rf"│ trigger +│ {name} +│", out), out
    assert out.count("│ value [95 %] │ 0.770 [0.671, 0.846]") == 3 and out.count("│ state ") == 3
    assert "not shown at 80 columns: severity" in out and "critical" not in out


@pytest.fixture(scope="module")
def churn_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    d = tmp_path_factory.mktemp("churn")
    cfg = d / "churn.yaml"
    cfg.write_text(yaml.safe_dump({"model": "churn", "triggers": [
        {"name": LONG[0], "metric": "recall", "op": "<", "value": 0.7, "window": "30d", "min_n": 5},
        {"name": LONG[1], "metric": "fpr", "op": ">", "value": 0.08, "window": "30d", "min_n": 5},
        {"name": LONG[2], "metric": "precision", "op": "<", "value": 0.5, "window": "30d", "min_n": 5,
         "variant": "treatment"}]}))
    url = f"sqlite:///{d / 'c.db'}"
    events = write_churn(d / "c.jsonl", parse_time_text("2026-09-01T00:00:00Z"), days=60, per_day=40)
    bad = d / "bad.jsonl"
    bad.write_text("".join('{"type":"prediction","prediction_id":"b%d","model":"churn","ts":"2026-10-20T00:00:00Z",'
                           '"score":1.7,"threshold":0.5}\n' % i for i in range(3))
                   + '{"type":"outcome","prediction_id":"x","label":3,"ts":"2026-10-20T00:00:00Z"}\n'
                   + "{not json, and a long line of garbage that goes on and on and on and on and on and on}\n")
    base = ["--config", str(cfg), "--db", url]
    assert main(base + ["replay", str(events)]) == 0
    assert main(base + ["replay", str(bad)]) == 0
    assert main(base + ["alerts", "evaluate", "--at", "2026-10-30T00:00:00Z", "--no-notify"]) == 0
    return str(cfg), url


def _render(db: tuple[str, str], args: list[str], width: int, capsys: pytest.CaptureFixture[str],
            monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    assert main(["--config", db[0], "--db", db[1]] + args) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("width", [80, 100, 120])
def test_long_trigger_names_never_wrap(churn_db: tuple[str, str], width: int, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for args in (["alerts"], ["alerts", "evaluate", "--at", "2026-10-30T00:00:00Z", "--dry-run"]):
        out = _render(churn_db, args, width, capsys, monkeypatch)
        _rows_whole(out, width)
        for name in LONG:
            assert name in out
        assert re.search(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", out)  # the value interval, whole


# --- 3. dead letters: the detail is cut last, inside its cell ----------------------------------------------
@pytest.mark.parametrize("width", [80, 100, 120])
def test_dead_letter_detail_is_cut_last_and_only_inside_its_cell(churn_db: tuple[str, str], width: int,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    out = _render(churn_db, ["dead-letters"], width, capsys, monkeypatch)
    table = out[out.index("latest "):out.index("raw payloads")]
    heads = next(line for line in table.splitlines() if line.startswith("┃")).split("┃")[1:-1]
    heads = [h.strip() for h in heads]
    want = {120: ["received", "reason", "source", "where", "detail"],
            100: ["received", "reason", "source", "where", "detail"],
            80: ["reason", "source", "where", "detail"]}[width]
    assert heads == want
    rows = [line for line in table.splitlines() if line.startswith("│")]
    assert len(rows) == 5
    for line in rows:
        assert len(line) <= width
        cells = line.split("│")[1:-1]
        assert all("…" not in c for c in cells[:-1]) and all(c.strip() for c in cells)
    assert "JSON is malformed" in table and "line 5" in table
    if width < 120:
        assert any(line.split("│")[-2].rstrip().endswith("…") for line in rows)


# --- 2. the progress line ---------------------------------------------------------------------------------
def _line(texts: dict[str, str], bar: int) -> str:
    from driftline.commands.progress import _join

    return " ".join(_join(texts, bar))


@pytest.mark.parametrize("width", [78, 98, 118])  # the line's share of 80/100/120 columns (spinner and a space)
@pytest.mark.parametrize("big", [False, True])
def test_progress_line_fits_with_events_and_dead_letters(width: int, big: bool) -> None:
    from driftline.commands.progress import fit_progress, progress_forms

    k = 1000 if big else 1
    forms = progress_forms("replay", 42.0, 5_000 * k, 12_345.0 * k, 4_990 * k, 10 * k,
                           ("decoding", 8_192, 16_000), 65.0, 3_725.0)
    texts, bar, _ = fit_progress(forms, width)
    line = _line(texts, bar)
    assert len(line) <= width and "…" not in line, line
    assert f"{5_000 * k:,} ev" in line and (f"dead {10 * k:,}" in line or f"dead letters {10 * k:,}" in line)
    assert "42%" in line
    if width >= 98:
        assert bar >= 10 and "/s" in line
    if width >= 118 and not big:  # at 120 the full labels and the batch's stage
        assert "5,000 events" in line and "accepted 4,990" in line and "dead letters 10" in line
        assert "decoding 8,192" in line


def test_progress_forms_never_lengthen_again_as_numbers_grow() -> None:
    """Tryout: at one width the line flipped between 'accepted'/'ok' and 'events'/'ev' and its bar changed length
    from frame to frame; a frame never uses longer forms or a longer bar than an earlier one needed."""
    from driftline.commands.progress import fit_progress, progress_forms

    floor: dict[str, int] = {}
    seen: list[tuple[dict[str, int], int]] = []
    cap = 40
    for events, stage in [(900, None), (99_000, ("decoding", 8_192, 16_000)), (120_000, None), (5_000_000, None),
                          (5_100_000, ("storing", 16_000, 16_000))]:
        forms = progress_forms("replay", 50.0, events, events / 7, events - 10, 10, stage, 65.0, 100.0)
        texts, bar, floor = fit_progress(forms, 98, floor)
        cap = min(cap, bar) if bar else cap
        seen.append((dict(floor), cap))
        assert len(_line(texts, bar)) <= 98
    for (a, bar_a), (b, bar_b) in zip(seen, seen[1:]):
        assert all(b[k] >= a[k] for k in a) and bar_b <= bar_a


def test_progress_renders_one_unellipsised_line_at_100_columns() -> None:
    from driftline.commands.progress import IngestProgress

    buf = io.StringIO()
    console = Console(file=buf, width=100, force_terminal=True)
    t = iter(range(100))
    bar = IngestProgress(console, "replay", 1000.0, lambda: float(next(t)))
    with bar:
        bar.events, bar.accepted = 5_000, 4_990
        bar.update(500.0)
        bar.tick("decoding", 8_192, 16_000)  # the next batch under way
        bar.bar.refresh()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buf.getvalue())
    lines = [p for p in re.split(r"[\r\n]", text) if p.strip()]
    assert lines and all(len(p) <= 100 and "…" not in p for p in lines), lines
    assert "5,000 ev" in lines[-1] and "50%" in lines[-1] and "replay" in lines[-1]


# --- 4. slices worst first ------------------------------------------------------------------------------
def _conf(tp: int, fn: int, fp: int, tn: int) -> np.ndarray:
    c = np.zeros((3, 2), dtype=np.int64)
    c[POS, 1], c[POS, 0], c[NEG, 1], c[NEG, 0] = tp, fn, fp, tn
    return c


def test_every_slice_table_is_ordered_like_the_worst_list() -> None:
    from driftline.analysis.slices import severity_key, slices_of, worst_slices

    per = {"country": {"FR": _conf(90, 10, 5, 900),   # fine
                       "DE": _conf(20, 80, 5, 900),   # far below the recall target
                       "ES": _conf(50, 50, 5, 900),   # below
                       "IT": _conf(0, 0, 0, 0),       # no labels: no shortfall, last
                       "AT": _conf(90, 10, 5, 900)},  # ties FR: by name
           "channel": {"web": _conf(60, 40, 5, 900), "app": _conf(30, 70, 5, 5000)}}
    got = slices_of(per, ["country", "channel"], target_recall=0.7)
    assert [s.value for s in got["country"]] == ["DE", "ES", "AT", "FR", "IT"]
    assert [s.value for s in got["channel"]] == ["app", "web"]
    for vals in got.values():
        assert vals == sorted(vals, key=severity_key)
    worst = worst_slices(s for vals in got.values() for s in vals)
    assert [s.value for s in worst] == ["DE", "app", "ES", "web"]


# --- 6. simulated ids unique per seed ----------------------------------------------------------------
def test_simulated_ids_do_not_collide_across_seeds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    files = []
    for seed in (7, 8):
        f = tmp_path / f"s{seed}.jsonl"
        assert main(["--db", url, "simulate", "--days", "1", "--per-day", "200", "--seed", str(seed),
                     "--end", "2026-11-30T00:00:00Z", "--out", str(f)]) == 0
        files.append(f)
    ids = [{line.split('"prediction_id":"')[1].split('"')[0] for line in f.read_text().splitlines()
            if '"type":"prediction"' in line} for f in files]
    assert all(i.startswith("tx-") and not i.startswith("tx-s") for i in ids[0])  # the default seed: as before
    assert all(i.startswith("tx-s8-") for i in ids[1]) and not ids[0] & ids[1]
    import json

    for f in files:
        assert main(["--db", url, "replay", "--json", str(f)]) == 0
    docs = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()[-2:]]
    assert docs[1]["duplicates"] == 0 and docs[1]["predictions"] == len(ids[1])


def test_the_simulated_hour_feature_is_the_utc_hour_of_ts_whatever_the_end(tmp_path: Path) -> None:
    """SRE tryout: with an --end that is not midnight, `hour` was hours since the span's daily start (7 h off
    the UTC hour of ts in its run), while the README calls it the hour of day."""
    import json
    from datetime import datetime, timezone

    f = tmp_path / "h.jsonl"
    assert main(["simulate", "--days", "1", "--per-day", "300", "--end", "2026-11-30T07:20:00Z",
                 "--out", str(f)]) == 0
    preds = [json.loads(x) for x in f.read_text().splitlines() if '"type":"prediction"' in x]
    hours = [(datetime.fromisoformat(p["ts"].replace("Z", "+00:00")).astimezone(timezone.utc).hour,
              p["features"]["hour"]) for p in preds]
    assert len(hours) > 200 and all(h == feature for h, feature in hours)


# --- payload previews fit the console ------------------------------------------------------------------------
def test_preview_counts_escapes_as_shown_and_never_cuts_one() -> None:
    from driftline.terminal import preview

    assert preview("abc", 10) == "abc"
    nul = preview("\x00" * 120, 30)
    assert nul == "\\x00" * 7 + "…" and len(nul) <= 30
    assert preview("a" * 50, 20) == "a" * 19 + "…"
    assert preview("日本語のテキスト", 7) == "日本語…"  # wide characters take two cells


@pytest.mark.parametrize("width", [80, 120])
def test_dead_letter_payloads_fit_the_width(tmp_path: Path, width: int, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(
        b"\x00" * 120 + b"\n{not json " + b"x" * 200 + b"\n")))
    assert main(["--db", url, "replay", "-"]) == 0
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    assert main(["--db", url, "dead-letters"]) == 0
    out = capsys.readouterr().out
    previews = out[out.index("raw payloads"):].splitlines()[1:]
    assert len(previews) == 2 and all(len(line) <= width and line.endswith("…") for line in previews), out
    assert all(line.startswith("  stdin line ") for line in previews)
    assert "source stdin is stdin" not in out
