"""A trigger on a metric measured in seconds (label_delay_p50/p95, silence_seconds) takes its `value` as a duration,
as the README writes it (`label_delay_p95 > 30d`), converted to seconds; a bare number stays seconds. Tryout:
`value: 30d` was refused at start with ``invalid field `triggers[0].value`: Expected `float`, got `str` ('30d')``.
A duration on any other metric, or text that is neither, is refused naming the field and why. Everything that
shows or exports the trigger (alerts, the rendered Prometheus rules, the report, the exporter) reads the seconds.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from driftline.cli import main
from driftline.config import ConfigError, from_dict, load
from driftline.targets import agreed_target
from driftline.triggers.rules import render_rules, to_yaml
from driftline.triggers.runner import compile_rules

import test_report_trigger_units

DAY = 86400.0


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text("window: 70d\n" + text)
    return path


def _triggers(labels: Any, silence: Any) -> str:
    return (f"triggers:\n  - {{name: labels_slow, metric: label_delay_p95, op: '>', value: {labels}, window: 70d}}\n"
            f"  - {{name: feed_silent, metric: silence_seconds, op: '>', value: {silence}, window: 1h, min_n: 0}}\n")


def test_a_duration_value_is_seconds_in_every_rule_and_rendered_rule(tmp_path: Path) -> None:
    durations = load(_config(tmp_path, _triggers("30d", "2h")))
    seconds = load(_config(tmp_path, _triggers(30 * 86400, 7200)))
    assert [t.line for t in durations.triggers] == [30 * DAY, 7200.0]
    assert compile_rules(durations.triggers) == compile_rules(seconds.triggers)  # alerts, exporter, report
    assert [r.value for r in compile_rules(durations.triggers)] == [30 * DAY, 7200.0]
    assert agreed_target(durations, "label_delay_p95").value == 30 * DAY  # type: ignore[union-attr]
    rendered = to_yaml(render_rules(durations))
    assert rendered == to_yaml(render_rules(seconds))
    assert "> 2592000" in rendered
    from services import require_binary

    (tmp_path / "r.yml").write_text(rendered)
    res = subprocess.run([require_binary("promtool"), "check", "rules", str(tmp_path / "r.yml")],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stdout + res.stderr


def test_config_check_shows_the_line_as_a_duration_and_exports_seconds(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = _config(tmp_path, _triggers("30d", "2h"))
    assert main(["--config", str(path), "config", "check"]) == 0
    out = capsys.readouterr().out
    assert "labels_slow: label_delay_p95 > 30 d over 70d (warning)" in out
    assert "feed_silent: silence_seconds > 2 h over 1h (warning)" in out
    assert main(["--config", str(path), "config", "check", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [t["value"] for t in doc["summary"]["triggers"]] == [30 * DAY, 7200.0]


@pytest.mark.parametrize(("metric", "value", "why"), [
    ("recall", "30d", "'30d' is a duration, but recall is not measured in time"),
    ("drifted", "1h", "'1h' is a duration, but drifted is not measured in time (it is a count)"),
    ("label_delay_p95", "30 days", "(did you mean '30d'?)"),
    ("label_delay_p95", "'2592000'", "'2592000' is a number written as text: remove the quotes"),
    ("silence_seconds", "soon", "silence_seconds is measured in seconds: write a duration such as"),
    ("recall", "'0.7'", "'0.7' is a number written as text: remove the quotes"),
    ("recall", "'70%'", "(a percentage? write it as a fraction: 0.7)"),
    # as every duration of the config, 0 to 36525d: `1000000d` and a negative bare number were accepted (`-5`'s
    # rendered summary read `line > 0s` against `> -5`) while `-1d` was refused
    ("label_delay_p95", "1000000d", "8.64e+10 seconds is longer than 36525d (100 years) (1000000 d)"),
    ("label_delay_p50", "1e20", "1e+20 seconds is longer than 36525d"),
    ("label_delay_p95", "-5", "-5 seconds is negative: label_delay_p95 is a time, 0 to 36525d"),
    ("silence_seconds", "-0.5", "-0.5 seconds is negative"),
])
def test_a_value_that_is_no_line_of_the_metric_is_refused_naming_the_field(
        tmp_path: Path, metric: str, value: str, why: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"triggers: [{{name: t, metric: {metric}, op: '>', value: {value}}}]\n")
    with pytest.raises(ConfigError) as err:
        load(path)
    assert "invalid field `triggers[0].value`: " in str(err.value), str(err.value)
    assert why in str(err.value), str(err.value)


def test_numbers_stay_accepted_everywhere() -> None:
    config = from_dict({"triggers": [{"name": "r", "metric": "recall", "op": "<", "value": 0.7},
                                     {"name": "d", "metric": "label_delay_p50", "op": ">", "value": 86400},
                                     {"name": "z", "metric": "silence_seconds", "op": ">", "value": "0s"},
                                     {"name": "y", "metric": "label_delay_p95", "op": ">", "value": "36525d"}]})
    assert [r.value for r in compile_rules(config.triggers)] == [0.7, 86400.0, 0.0, 36525 * DAY]


def test_the_report_and_alerts_read_a_duration_line_as_its_seconds(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """test_report_trigger_units's report, its label-delay and silence lines written as durations."""
    written = {"labels_slow": "14d", "feed_silent": "2h"}
    triggers = [{**t, "value": written.get(t["name"], t["value"])} for t in test_report_trigger_units.TRIGGERS]
    monkeypatch.setattr(test_report_trigger_units, "TRIGGERS", triggers)
    test_report_trigger_units.test_trigger_lines_and_values_read_as_in_alerts(tmp_path)


def test_a_line_is_shown_exactly_as_agreed() -> None:
    """Verify tryout: `value: 90061` on label_delay_p95 read `> 1 d` in `config check` (the rendered rule says
    90061s); a line is rounded for reading only where the rounding is exact."""
    from driftline.metric_names import line_text

    assert line_text("label_delay_p95", 90061) == "90061s"
    assert line_text("label_delay_p95", 0.5) == "0.5s"
    assert line_text("label_delay_p95", 108000) == "30h"  # 1.25 d would print as 1.2 d
    assert line_text("label_delay_p95", 2592000) == "30 d" and line_text("silence_seconds", 5400) == "1.5 h"
    assert line_text("recall", 0.7) == "0.70"


def test_config_check_shows_the_line_exactly(tmp_path, capsys) -> None:
    """Verify tryout: `config check` read `> 1 d` for `value: 90061` (its own rounding, not line_text)."""
    import yaml

    from driftline.cli import main

    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"triggers": [
        {"name": "odd", "metric": "label_delay_p95", "op": ">", "value": 90061, "window": "70d"},
        {"name": "month", "metric": "label_delay_p95", "op": ">", "value": "30d", "window": "70d"}]}))
    assert main(["--config", str(cfg), "config", "check"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "odd: label_delay_p95 > 90061s over 70d" in out and "month: label_delay_p95 > 30 d over 70d" in out
