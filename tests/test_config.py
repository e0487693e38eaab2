"""Config validation: defaults, the shipped example, and errors that name the field."""

import re
from pathlib import Path

import pytest

from driftline.config import ConfigError, from_dict, load
from driftline.durations import parse_duration

ROOT = Path(__file__).resolve().parents[1]


def test_defaults():
    c = from_dict({})
    assert c.threshold == 0.5 and c.bucket_s == 3600 and c.window_s == 7 * 86400
    assert c.labels.policy == "explicit" and c.labels.horizon_s == 90 * 86400


@pytest.mark.parametrize("data,field", [
    ({"threshold": 1.5}, "threshold"),
    ({"window": "a week"}, "window"),
    ({"labels": {"policy": "sometimes"}}, "labels.policy"),
    ({"labels": {"horizon": "-3d"}}, "labels.horizon"),
    ({"costs": {"complaint_rate": 2}}, "costs.complaint_rate"),
    ({"triggers": [{"name": "r", "metric": "recall", "op": "<", "value": 0.7, "mode": "maybe"}]},
     "triggers[0].mode"),
    ({"triggers": [{"name": "r", "metric": "recall", "value": 0.7}]}, "triggers[0]"),
    ({"thresold": 0.5}, "thresold"),
    ({"bucket": "0h"}, "`bucket`"),
    ({"labels": {"horizon": "0d"}}, "`labels.horizon`"),
    ({"labels": {"implicit_negative_after": "0s"}}, "`labels.implicit_negative_after`"),
    ({"triggers": [{"name": "r", "metric": "recall", "op": "<", "value": 0.7, "for": "-1m"}]}, "`triggers[0]"),
    ({"triggers": [{"name": "r", "metric": "recall", "op": "<", "value": 0.7, "window": "0d"}]},
     "`triggers[0].window`"),
    ({"triggers": [{"name": "r", "metric": "recall", "op": "<", "value": 0.7, "window": "7x"}]},
     "`triggers[0].window`"),
    ({"schedule": {"evaluate_every": "0s"}}, "`schedule.evaluate_every`"),
    ({"notify": {"timeout": "0s"}}, "`notify.timeout`"),
    # SRE tryout: accepted, then wrong at run time
    ({"model": "all"}, "`model`"),
    ({"model": "__other__"}, "`model`"),
    ({"model": "ALL"}, "`model`"),
    ({"model": " all "}, "`model`"),
    ({"model": ""}, "`model`"),
    ({"model": "m" * 201}, "`model`"),
    ({"kafka": {"group_id": ""}}, "`kafka.group_id`"),
    ({"kafka": {"client_id": " "}}, "`kafka.client_id`"),
    ({"kafka": {"outcomes_topic": ""}}, "`kafka.outcomes_topic`"),
    ({"kafka": {"dead_letter_topic": ""}}, "`kafka.dead_letter_topic`"),
    # second tryout: a dead-letter topic that is consumed dead-lettered its own copies without end
    ({"kafka": {"dead_letter_topic": "predictions"}}, "`kafka.dead_letter_topic`"),
    ({"kafka": {"dead_letter_topic": "o", "outcomes_topic": "o"}}, "`kafka.dead_letter_topic`"),
    ({"kafka": {"predictions_topic": "a b"}}, "`kafka.predictions_topic`"),
    ({"kafka": {"dead_letter_topic": "x" * 250}}, "`kafka.dead_letter_topic`"),
    # an alert line below its warning line named the section only (`drift`)
    ({"drift": {"psi_warning": 0.3, "psi_alert": 0.1}}, "`drift.psi_alert`: 0.1 is below psi_warning (0.3)"),
])
def test_errors_name_the_field(data, field):
    with pytest.raises(ConfigError) as err:
        from_dict(data)
    assert field in str(err.value)


def test_implicit_negative_after_without_its_policy_is_refused():
    """Verification tryout: `labels: {implicit_negative_after: 30d}` alone was silently ignored (explicit-only rates)."""
    with pytest.raises(ConfigError) as err:
        from_dict({"labels": {"implicit_negative_after": "30d"}})
    assert str(err.value) == ("config: invalid field `labels.implicit_negative_after`: is set but `labels.policy` is "
                              "'explicit': add `policy: implicit_negative_after`, or remove it")
    with pytest.raises(ConfigError, match="labels.policy"):
        from_dict({"labels": {"policy": "explicit", "implicit_negative_after": "7d"}})
    assert from_dict({"labels": {"policy": "implicit_negative_after"}}).labels.implicit_after_s == 30 * 86400
    assert from_dict({}).labels.implicit_after_s is None


def test_implicit_negative_policy():
    c = from_dict({"labels": {"policy": "implicit_negative_after", "implicit_negative_after": "30d"}})
    assert c.labels.implicit_after_s == 30 * 86400


def test_durations():
    assert parse_duration("90s") == 90 and parse_duration("1.5h") == 5400 and parse_duration("2w") == 14 * 86400
    with pytest.raises(ValueError):
        parse_duration("7 days")


def test_example_config_loads():
    c = load(ROOT / "driftline.example.yaml")
    assert c.model == "fraud" and c.threshold == 0.5
    assert {t.metric for t in c.triggers} >= {"recall", "fpr"}


def test_bad_yaml_file(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("threshold: [1,\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load(p)
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "missing.yaml")


@pytest.mark.parametrize("depth", [600, 100_000])
def test_deeply_nested_yaml_is_a_config_error(tmp_path, depth):
    """SRE tryout: `model: [[[…]]]` 500+ levels deep made PyYAML recurse past Python's limit, and every command
    ended in "unexpected RecursionError" (exit 1) instead of the config error naming the file (exit 2)."""
    p = tmp_path / "c.yaml"
    p.write_text("model: " + "[" * depth + "]" * depth + "\n")
    with pytest.raises(ConfigError, match=r"config .*c\.yaml: not valid YAML: nested too deeply"):
        load(p)


def test_yaml_syntax_error_is_one_line_with_its_position(tmp_path):
    """An unclosed quote: the message names line and column on one line, without PyYAML's multi-line excerpt."""
    p = tmp_path / "c.yaml"
    p.write_text('database:\n  url: "sqlite:///x.db\nthreshold: 0.5\n')
    with pytest.raises(ConfigError) as info:
        load(p)
    msg = str(info.value)
    assert "\n" not in msg and "^" not in msg
    assert "at line 4, column 1" in msg and "starts at line 2, column 8" in msg


def test_error_messages_say_what_is_expected_not_a_regex():
    with pytest.raises(ConfigError) as err:
        from_dict({"triggers": [{"name": "r", "metric": "recall", "op": "<", "value": 0.7, "window": "7x"}]})
    assert "a number and a unit s/m/h/d/w" in str(err.value) and "'7x'" in str(err.value)
    assert "regex" not in str(err.value)
    with pytest.raises(ConfigError) as err:
        from_dict({"triggers": [{"name": "1st", "metric": "recall", "op": "<", "value": 0.7}]})
    assert "`triggers[0].name`" in str(err.value) and "starts with a letter, got '1st'" in str(err.value)
    with pytest.raises(ConfigError) as err:
        from_dict({"labels": {"horizon": "0d"}})
    assert str(err.value) == "config: invalid field `labels.horizon`: duration must be positive, got '0d'"


def test_zero_for_and_cooldown_mean_none():
    """As in Prometheus, `for: 0s` fires at once; `cooldown: 0s` never holds a notification back."""
    c = from_dict({"triggers": [{"name": "r", "metric": "recall", "op": "<", "value": 0.7, "for": "0s",
                                 "cooldown": "0s"}]})
    assert parse_duration(c.triggers[0].for_, allow_zero=True) == 0.0 == parse_duration(c.triggers[0].cooldown,
                                                                                          allow_zero=True)
    with pytest.raises(ValueError):
        parse_duration("0s")


def test_windows_are_whole_numbers_of_buckets():
    with pytest.raises(ConfigError, match=r"field `window`: 36h is not a whole number of buckets \(1d each\)"):
        from_dict({"bucket": "1d", "window": "36h"})
    with pytest.raises(ConfigError, match=r"field `triggers\[0\].window`"):
        from_dict({"triggers": [{"name": "r", "metric": "recall", "op": "<", "value": 0.7, "window": "90m"}]})
    assert from_dict({"bucket": "15m", "window": "90m"}).window_s == 5400


def test_the_configs_name_bounds_mirror_the_event_contract():
    """config.py cannot import core: its copies of the bounds must stay equal to the ones events are held to."""
    from driftline import config_checks as config  # the bounds live there since config.py was split
    from driftline.core.labels import RESERVED
    from driftline.core.limits import MAX_NAME_LEN

    assert config._MAX_NAME_LEN == MAX_NAME_LEN and set(config._RESERVED_LABELS) == set(RESERVED)
    assert from_dict({"model": "m" * MAX_NAME_LEN}).model == "m" * MAX_NAME_LEN


@pytest.mark.parametrize("text, where", [
    ('model: fraud\ntriggers:\n  - {name: r, metric: recall, op: "<", value: 0.7, value: 0.1, window: 7d}\n',
     "at line 3, column 52: key 'value' is given twice (first at line 3, column 40)"),
    ("model: fraud\nkafka:\n  bootstrap: a:9092\nkafka:\n  group_id: x\n",
     "at line 4, column 1: key 'kafka' is given twice (first at line 2, column 1)"),
])
def test_a_key_given_twice_is_refused_naming_both_places(tmp_path: Path, text: str, where: str) -> None:
    """User tryout: `value: 0.7, value: 0.1` silently became `< 0.1`, a second `kafka:` block replaced the first
    (events with duplicate keys are refused; the config was not)."""
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError) as err:
        load(p)
    assert where in str(err.value)


def test_merge_keys_may_still_be_overridden_and_exponent_floats_are_numbers(tmp_path: Path) -> None:
    """`threshold: 5e-1` was refused as a string (YAML 1.1 wants a dot); a YAML merge (`<<`) may be overridden."""
    p = tmp_path / "c.yaml"
    p.write_text("model: fraud\nthreshold: 5e-1\ntriggers:\n  - &b {name: r, metric: recall, op: '<', value: 0.7, "
                 "window: 7d}\n  - <<: *b\n    name: r2\n    value: 0.6\n")
    cfg = load(p)
    assert cfg.threshold == 0.5
    for text, value in ((".5e0", 0.5), ("+5E-1", 0.5), ("5.e-1", 0.5)):  # YAML 1.2 floats (second tryout: .5e0)
        p.write_text(f"threshold: {text}\n")
        assert load(p).threshold == value
    p.write_text("threshold: 1_0e-1\n")  # YAML 1.1's underscores are not a YAML 1.2 number: refused, not 1.0
    with pytest.raises(ConfigError, match="threshold"):
        load(p)
    assert [(t.name, t.value) for t in cfg.triggers] == [("r", 0.7), ("r2", 0.6)]


def test_a_bad_report_cron_fails_at_load_naming_the_field(tmp_path: Path) -> None:
    """User tryout: a bad `schedule.weekly_report_cron` passed the config check and failed only when the scheduler
    started, without the `config c.yaml: invalid field` form."""
    p = tmp_path / "c.yaml"
    p.write_text('schedule:\n  weekly_report_cron: "61 * * * *"\n')
    with pytest.raises(ConfigError, match=r"invalid field `schedule.weekly_report_cron`: .*61"):
        load(p)
    p.write_text('schedule:\n  weekly_report_cron: "30 7 * * tue"\n')
    assert load(p).schedule.weekly_report_cron == "30 7 * * tue"


@pytest.mark.parametrize("text, message", [
    ("bucket: 7m\n", "invalid field `bucket`: 7m must divide a day"),
    ("bucket: 2d\nwindow: 1d\n", "invalid field `bucket`: 2d is longer than the window (1d)"),
])
def test_a_bad_bucket_names_its_field(tmp_path: Path, text: str, message: str) -> None:
    """User tryout: `bucket: 7m` was reported as 'invalid top level'."""
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load(p)


def test_shares_written_as_percent_text_get_the_fractions_hint():
    """Verification tryout: `ab.arms: {A: "50%"}` read only "Expected `float`, got `str` ('50%')", while `A: 50`
    got the percentages hint; text ending in % now gets it too."""
    with pytest.raises(ConfigError) as err:
        from_dict({"ab": {"control": "A", "arms": {"A": "50%", "B": "50%"}}})
    assert str(err.value) == ("config: invalid field `ab.arms.A`: Expected `float`, got `str` ('50%') (percentages? "
                              "write shares as fractions: A: 0.5, B: 0.5)")
    with pytest.raises(ConfigError, match=r"write shares as fractions: A: 0\.25, B: 0\.75\)"):
        from_dict({"ab": {"control": "A", "arms": {"A": 25, "B": "75%"}}})
    with pytest.raises(ConfigError, match=r"\('50%'\) \(a percentage\? write it as a fraction: 0\.5\)$"):
        from_dict({"threshold": "50%"})
    with pytest.raises(ConfigError) as err:
        from_dict({"ab": {"control": "A", "arms": {"A": "half", "B": 0.5}}})
    assert "fraction" not in str(err.value)


def test_implicit_negative_after_longer_than_the_horizon_is_refused():
    """Final tryout: `implicit_negative_after: 200d` with `horizon: 90d` loaded, and live traffic then expired every
    prediction at 90 d before it could mature: no implicit negative, no FPR, no warning."""
    with pytest.raises(ConfigError, match=r"labels.implicit_negative_after.*longer than labels.horizon \(90d\)"):
        from_dict({"labels": {"policy": "implicit_negative_after", "implicit_negative_after": "200d", "horizon": "90d"}})
    assert from_dict({"labels": {"policy": "implicit_negative_after", "implicit_negative_after": "90d",
                                 "horizon": "90d"}}).labels.implicit_after_s == 90 * 86400


def test_kafka_batch_max_bytes_is_bounded_at_load_naming_the_field(tmp_path: Path) -> None:
    """`run` batches are bounded by bytes too (SRE tryout: ~1 MB events grew `run` past 1 GB); the bound is checked
    at load, 1 MiB … 1 GiB, and reaches the Kafka settings."""
    from driftline.kafka.settings import resolve

    p = tmp_path / "c.yaml"
    assert load(p if p.write_text("{}\n") else p).kafka.batch_max_bytes == 16 << 20
    p.write_text("kafka:\n  batch_max_bytes: 1000\n")
    with pytest.raises(ConfigError, match=r"invalid field `kafka.batch_max_bytes`: Expected `int` >= 1048576"):
        load(p)
    p.write_text("kafka:\n  batch_max_bytes: 8388608\n")
    assert resolve(load(p).kafka, "k:9092", {}).batch_max_bytes == 8 << 20


@pytest.mark.parametrize("bucket, window", [("0.5s", "1h"), ("1.5s", "3s"), ("0.01m", "1h")])
def test_a_bucket_of_a_fraction_of_a_second_is_refused_at_load(bucket: str, window: str) -> None:
    """Tryout: `bucket: 0.5s` loaded and every event became an internal_error dead letter (ZeroDivisionError: buckets
    are whole seconds, bucket_s was 0); `1.5s` was checked as 1.5 s and stored as 1 s."""
    with pytest.raises(ConfigError, match=rf"field `bucket`: {re.escape(bucket)} is not a whole number of seconds"):
        from_dict({"bucket": bucket, "window": window})
    assert from_dict({"bucket": "0.5m", "window": "1h"}).bucket_s == 30


@pytest.mark.parametrize("cfg, field, says", [
    ({"targets": {"recal": 0.7}}, "targets.recal", "neither a metric nor a monthly KPI (did you mean 'recall'?)"),
    ({"targets": {"totl": 1e5}}, "targets.totl", "(did you mean 'total'?)"),
    ({"targets": {"brier_score": 0.1}}, "targets.brier_score", "write 'brier'"),
    ({"targets": {"recall": 70}}, "targets.recall", "70 is outside 0..1, the range of recall (a percentage? write "
                                                    "it as a fraction: 0.7)"),
    ({"targets": {"fpr": float("nan")}}, "targets.fpr", "nan is not a finite number"),
    ({"targets": {"review_hours": -1}}, "targets.review_hours", "-1 is negative"),
    ({"triggers": [{"name": "r", "metric": "recall", "op": "<", "value": 7}]}, "triggers[0].value",
     "7 is outside 0..1, the range of recall"),
    ({"triggers": [{"name": "r", "metric": "psi", "op": ">", "value": float("inf")}]}, "triggers[0].value",
     "inf is not a finite number"),
])
def test_targets_and_trigger_lines_nobody_could_meet_are_refused_at_load(cfg: dict, field: str, says: str) -> None:
    """Tryout: `targets: {recal: 0.7}` loaded and was never read (no slice or report judged recall against it);
    `targets: {recall: 70}` and `recall < 7` loaded (never met / always firing); `value: .nan` never fired."""
    with pytest.raises(ConfigError) as err:
        from_dict(cfg)
    assert f"invalid field `{field}`: " in str(err.value) and says in str(err.value), str(err.value)
    ok = from_dict({"targets": {"recall": 0.7, "fpr": 0.08, "analyst_hours": 1500, "total": 2e5, "log_loss": 3}})
    assert ok.targets["analyst_hours"] == 1500


@pytest.mark.parametrize("text, field", [
    ("costs: {currency: EUR, monthly_volume: 10, missed_positive: .inf}\n", "costs.missed_positive"),
    ("drift: {psi_warning: .inf}\n", "drift.psi_warning"),
    ("threshold: .nan\n", "threshold"),
    ("triggers:\n  - {name: r, metric: psi, op: '>', value: 1e400}\n", "triggers[0].value"),
])
def test_a_number_that_is_not_finite_is_refused_at_load_naming_its_field(tmp_path: Path, text: str,
                                                                       field: str) -> None:
    """Tryout: `costs.missed_positive: .inf` loaded (msgspec's ge=0 lets inf through), then `driftline ab` and
    `report` ended in 'unexpected IndexError'; `drift.psi_warning: .inf` was blamed on psi_alert."""
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=rf"invalid field `{re.escape(field)}`: -?(inf|nan) is not a finite number"):
        load(p)


@pytest.mark.parametrize("host", ["", " "])
def test_an_empty_exporter_host_is_refused_not_read_as_every_interface(host: str) -> None:
    """Tryout: `exporter: {host: ""}` loaded and `serve` listened on 0.0.0.0 (the socket layer's reading of ''),
    while the section's promise is loopback unless explicitly changed."""
    with pytest.raises(ConfigError, match=r"field `exporter.host`: .* is empty, which would listen on every interface"):
        from_dict({"exporter": {"host": host}})
    assert from_dict({"exporter": {"host": "0.0.0.0"}}).exporter.host == "0.0.0.0"


@pytest.mark.parametrize("host, says", [("localhost:9108", "carries a port: write the host alone ('localhost') and "
                                         "the port under `exporter.port` (9108)"),
                                        ("[::1]:9108", "carries a port: write the host alone ('::1')"),
                                        ("http://0.0.0.0:9108", "is a URL: write the bind address alone")])
def test_an_exporter_host_with_a_port_or_scheme_is_refused_at_load(host: str, says: str) -> None:
    """Tryout: `exporter: {host: "localhost:9108"}` passed `config check`, then `serve` failed to start with
    "cannot serve /metrics on localhost:9108:9108"; bare IPv6 addresses stay hosts."""
    with pytest.raises(ConfigError, match=re.escape(says)):
        from_dict({"exporter": {"host": host}})
    for ok in ("::1", "fe80::1%eth0", "0.0.0.0", "metrics.internal"):
        assert from_dict({"exporter": {"host": ok}}).exporter.host == ok


def test_the_finite_check_visits_each_aliased_list_once() -> None:
    """A YAML alias bomb (8 lines: each list holds the previous one 9 times, 9**8 values when expanded) was walked
    value by value by the finite-number check: the CLI took minutes before saying `unknown field`. Each shared list
    is now visited once (counted on iteration, not timed)."""
    from driftline.config_fields import non_finite

    walked = []

    class Counted(list):
        def __iter__(self):  # type: ignore[no-untyped-def]
            walked.append(1)
            return super().__iter__()

    level: list = Counted(["x"] * 9)
    for _ in range(8):
        level = Counted([level] * 9)
    assert non_finite({"a": level}) is None and len(walked) == 9
    shared = [1.0, float("inf")]
    assert non_finite({"p": [shared, shared]}) == ("p[0][1]", float("inf"))


@pytest.mark.parametrize("text", ["", "\n", "# settings come later\n", "---\n...\n", "null\n"])
def test_a_config_file_without_settings_is_refused(tmp_path: Path, text: str) -> None:
    """Tryout: an empty file (a truncated deploy, an empty ConfigMap key) loaded as the built-in defaults: model
    fraud, no triggers, so `run` would watch the wrong model and never alert, silently. `{}` still asks for them."""
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=r"holds no settings \(empty, or comments only\)"):
        load(p)
    p.write_text("{}\n")
    assert load(p) == from_dict({})


@pytest.mark.parametrize("cfg, field", [
    ({"triggers": [{"name": "r", "metric": "recall", "op": "<", "value": 0.7, "for": "99999999999999d"}]},
     "triggers[0].for"),
    ({"triggers": [{"name": "r", "metric": "recall", "op": "<", "value": 0.7, "cooldown": "36526d"}]},
     "triggers[0].cooldown"),
    ({"labels": {"horizon": "99999999d"}}, "labels.horizon"),
    ({"schedule": {"evaluate_every": "99999999999999d"}}, "schedule.evaluate_every"),
    ({"notify": {"backoff": "40000d"}}, "notify.backoff"),
])
def test_every_config_duration_has_the_windows_100_year_bound(cfg: dict, field: str) -> None:
    """Tryout: `for: 99999999999999d` loaded and `alerts render` wrote a rule promtool refused ('duration out of
    range'); the other durations had no bound either."""
    with pytest.raises(ConfigError, match=rf"field `{re.escape(field)}`: \d+d is longer than 36525d \(100 years\)"):
        from_dict(cfg)
    zero = from_dict({"triggers": [{"name": "r", "metric": "recall", "op": "<", "value": 0.7, "for": "0s",
                                    "cooldown": "0s"}]})
    assert zero.triggers[0].cooldown == "0s"
