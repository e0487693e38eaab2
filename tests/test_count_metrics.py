"""New-user tryout: a `metric: drifted` trigger (how many features the drift report calls drifted) printed its line
as 'drifted > 0.00' and its value as '2.0000' in `alerts` and `alerts evaluate`, as if a statistic. A count is
shown as one everywhere a trigger's numbers are: the CLI, notifications and the rendered alert annotations."""

from __future__ import annotations

from driftline.commands.alerts import value_of
from driftline.config import from_dict
from driftline.metric_names import fmt_line
from driftline.triggers.notify import fmt_value, summary
from driftline.triggers.model import TriggerState
from driftline.triggers.rules import render_rules
from driftline.triggers.runner import compile_rules

TRIGGERS = [{"name": "many", "metric": "drifted", "op": ">", "value": 0},
            {"name": "amount", "metric": "drifted", "feature": "amount", "op": ">=", "value": 1},
            {"name": "mv", "metric": "multivariate_drifted", "op": ">=", "value": 1},
            {"name": "half", "metric": "drifted", "op": ">", "value": 0.5},
            {"name": "psi", "metric": "psi", "op": ">", "value": 0.25}]


def _rules():
    return {r.name: r for r in compile_rules(from_dict({"triggers": TRIGGERS}).triggers)}


def test_drifted_counts_print_as_whole_numbers_in_the_cli_and_notifications():
    rules = _rules()
    assert [fmt_line(rules[n]) for n in ("many", "amount", "mv", "half", "psi")] == ["0", "1", "1", "0.5", "0.25"]
    assert value_of("drifted", 2.0) == "2" and value_of("multivariate_drifted", 1.0) == "1"
    assert value_of("drifted", 1204.0) == "1,204" and value_of("psi", 2.0) == "2.0000"  # statistics unchanged
    assert fmt_value(rules["many"], 2.0) == "2" and fmt_value(rules["many"], None) == "n/a"


def test_a_drifted_notification_summary_says_the_count():
    rule = _rules()["many"]
    state = TriggerState(trigger="many", state="firing", since=0.0, updated_at=0.0, value=2.0, judged=2.0, n=4213,
                         window="7d")
    text = summary(rule, "fraud", state, "firing")
    assert "drifted of fraud is 2 over 7d (line > 0)" in text, text


def test_rendered_annotations_print_the_count_whole():
    alerts = {a.labels["trigger"]: a.annotations for a in render_rules(from_dict({"triggers": TRIGGERS})).alerts}
    for name in ("many", "amount", "mv"):
        assert '{{ $value | printf "%.0f" }}' in alerts[name]["summary"], alerts[name]
    assert alerts["many"]["summary"].endswith("(line > 0)")
    assert '{{ $value | printf "%.4f" }}' in alerts["psi"]["summary"]
