"""Configuration: YAML validated at start into typed Structs; every error names its field (the service's sections,
exporter, kafka, schedule and notify, are in config_service; the limits section in config_limits; the field checks
and Base in config_checks)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import yaml

from .config_checks import (DEFAULT_RUNBOOK_BASE_URL, Base, Duration, NonNeg, Probability,  # noqa: F401
                            _MAX_NAME_LEN, _ab_arms, _absolute_url, _event_names, _no_reserved,
                            _positive_durations)
from .config_fields import (dict_entry, enum_choices, field_path, misspelled_slice, non_finite, percent_hint,
                            plain_kinds, unknown_field, value_at, whole_floats, whole_number_hint)
from .config_limits import Limits, Storage
from .config_scalars import boolean_number, line_of, unquoted
from .config_service import Exporter, Kafka, Notify, Schedule  # noqa: F401 - importers of driftline.config use them
from .config_yaml import colon_hint, decimal_comma, events_hint, load_yaml, yaml_where
from .wide_text import wide_encoding
from .durations import duration_hint, parse_duration, window_too_long
from .domain import Costs, Domain
from .terminal import shell_word
from .metric_names import MULTIVARIATE, trigger_line, unknown_metric, unknown_target, value_problem


class ConfigError(ValueError):
    """A configuration problem, with the offending field in the message."""


_PATTERN_HELP = {
    r"^\s*\d+(\.\d+)?\s*[smhdw]\s*$": "expected a duration: a number and a unit s/m/h/d/w, e.g. '90s', '1h', '7d'",
    r"^[A-Za-z][A-Za-z0-9_]*$": "expected a name of letters, digits and _ that starts with a letter",
}


class Labels(Base):
    """How outcomes are joined: explicit outcomes only, or no outcome after a delay means negative."""

    policy: Literal["explicit", "implicit_negative_after"] = "explicit"
    implicit_negative_after: Duration | msgspec.UnsetType = msgspec.UNSET
    """30d when unset; set under `explicit` it is refused (it was silently ignored: explicit-only rates)."""
    horizon: Duration = "90d"

    def __post_init__(self) -> None:
        _positive_durations("", implicit_negative_after=self._implicit_text, horizon=self.horizon)
        if self.implicit_negative_after is not msgspec.UNSET and self.policy == "explicit":
            raise ValueError("implicit_negative_after: is set but `labels.policy` is 'explicit': add "
                             "`policy: implicit_negative_after`, or remove it")
        if self.policy == "implicit_negative_after" and parse_duration(self._implicit_text) > self.horizon_s:
            raise ValueError(f"implicit_negative_after: {self._implicit_text} is longer than labels.horizon "
                             f"({self.horizon}): a prediction expires at the horizon before it could mature into an "
                             "implicit negative (final tryout: none ever did); shorten it or lengthen the horizon")

    @property
    def _implicit_text(self) -> str:
        return "30d" if self.implicit_negative_after is msgspec.UNSET else self.implicit_negative_after

    @property
    def horizon_s(self) -> float:
        return parse_duration(self.horizon)

    @property
    def implicit_after_s(self) -> float | None:
        return parse_duration(self._implicit_text) if self.policy == "implicit_negative_after" else None


class Trigger(Base):
    """A pre-agreed alert line: metric, comparison, value, window, minimum n and how to judge it."""

    name: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z][A-Za-z0-9_]*$")]
    metric: str
    op: Literal["<", "<=", ">", ">="]
    value: float | str
    """The line as written: a number, or for a metric measured in seconds (label delays, silence_seconds) also a
    duration ('30d'); `line` is the number compared with."""
    window: Duration = "7d"
    min_n: Annotated[int, msgspec.Meta(ge=0)] = 30
    mode: Literal["point", "confident"] = "point"
    severity: Literal["warning", "critical"] = "warning"
    for_: Duration | None = msgspec.field(default=None, name="for")
    cooldown: Duration = "1h"
    hysteresis: NonNeg = 0.0
    feature: str | None = None
    variant: str | None = None
    runbook_url: str | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        problem = unknown_metric(self.metric)
        if problem:
            raise ValueError(f"metric: {problem}")
        try:
            line = trigger_line(self.metric, self.value)
        except ValueError as err:
            raise ValueError(f"value: {err}") from None
        problem = value_problem(self.metric, line)
        if problem:
            raise ValueError(f"value: {problem}")
        if self.feature is not None and self.metric in MULTIVARIATE:
            raise ValueError(f"feature: {self.metric} judges all features together; remove `feature`")
        _positive_durations("", window=self.window)
        window_too_long("window", self.window)
        if self.variant is not None:
            _event_names("variant", [self.variant])
        _absolute_url("runbook_url", self.runbook_url)
        _positive_durations("", allow_zero=True, cooldown=self.cooldown, **{"for": self.for_})

    @property
    def line(self) -> float:
        """`value` as the number compared with (a duration in seconds)."""
        return trigger_line(self.metric, self.value)






class AB(Base):
    """A/B design: arms (variant → expected share), the control arm, split or shadow."""

    design: Literal["split", "shadow"] = "split"
    control: str | msgspec.UnsetType = msgspec.UNSET
    """'A' when unset (see control_arm); set, it needs `arms` (tryout: `ab: {control: Z}` alone loaded silently);
    required with design shadow (the production arm)."""
    arms: dict[str, Annotated[float, msgspec.Meta(gt=0)]] = {}
    planned_positives: Annotated[int, msgspec.Meta(ge=1)] = 500
    target_recall_diff: Annotated[float, msgspec.Meta(gt=0, lt=1)] = 0.05

    def __post_init__(self) -> None:
        _event_names("arms", list(self.arms), "key ")
        _no_reserved("arms", list(self.arms))
        if self.control is not msgspec.UNSET:
            _event_names("control", [self.control])
        _ab_arms(self.control, self.arms, self.design)

    @property
    def control_arm(self) -> str:
        """The control variant: the configured one, else 'A'."""
        return "A" if self.control is msgspec.UNSET else self.control






class DriftConfig(Base):
    """Drift thresholds and reference binning (defaults: PSI 0.1 warning / 0.25 alert, JS 0.1, p < 0.01 after BH;
    alpha is the per-report false-alarm rate under no drift)."""

    psi_warning: NonNeg = 0.1
    psi_alert: NonNeg = 0.25
    js: Probability = 0.1
    alpha: Annotated[float, msgspec.Meta(gt=0.0, lt=1.0)] = 0.01
    prevalence_change: NonNeg = 0.2
    numeric_bins: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 10
    top_k: Annotated[int, msgspec.Meta(ge=1, le=10000)] = 20
    seasonality: Literal["none", "hour_of_day", "day_of_week", "both"] = "none"
    """Default seasonality of `reference set` (UTC): a window is compared with the reference's same seasons."""
    season_min_n: Annotated[int, msgspec.Meta(ge=1)] = 100
    """A season slice with fewer reference predictions is thin: its window hours use the whole reference."""
    sample_k: Annotated[int, msgspec.Meta(ge=16, le=4096)] = 256
    """Feature vectors sampled per bucket and model/version/variant for multivariate drift (core.sample)."""
    pca_variance: Annotated[float, msgspec.Meta(gt=0.0, lt=1.0)] = 0.65
    """Share of the reference's variance the PCA components of the multivariate drift statistic keep."""

    def __post_init__(self) -> None:
        if self.psi_alert < self.psi_warning:
            raise ValueError(f"psi_alert: {self.psi_alert:g} is below psi_warning ({self.psi_warning:g}): the alert "
                             "line must be at or above the warning line")


class Config(Base):
    """The whole configuration; the defaults are domain-neutral (no costs, no domain words)."""

    model: str = "fraud"
    threshold: Probability = 0.5
    bucket: Duration = "1h"
    window: Duration = "7d"
    database: str | None = None
    labels: Labels = Labels()
    costs: Costs | None = None
    domain: Domain = Domain()
    features: dict[str, Literal["numeric", "categorical"]] = {}
    max_features: Annotated[int, msgspec.Meta(ge=0)] = 50
    slices: list[str] = []
    targets: dict[str, float] = {}
    triggers: list[Trigger] = []
    ab: AB = AB()
    kafka: Kafka = Kafka()
    exporter: Exporter = Exporter()
    schedule: Schedule = Schedule()
    notify: Notify = Notify()
    drift: DriftConfig = DriftConfig()
    limits: Limits = Limits()
    storage: Storage = Storage()

    def __post_init__(self) -> None:
        if not self.model or len(self.model) > _MAX_NAME_LEN:
            raise ValueError(f"model: must be 1 to {_MAX_NAME_LEN} characters (events' model names are bounded "
                             "the same way)")
        _event_names("model", [self.model])
        _no_reserved("model", [self.model])  # events refuse ' all' and 'ALL' as well
        if self.database is not None and not self.database.strip():  # was the default database, silently
            raise ValueError("database: empty: give a database URL (sqlite:///PATH or postgresql+psycopg://USER@HOST/"
                             "DB), or leave `database` out for --db, DRIFTLINE_DB or the default sqlite:///driftline.db")
        _positive_durations("", bucket=self.bucket, window=self.window)
        window_too_long("window", self.window)
        bucket, window = parse_duration(self.bucket), parse_duration(self.window)
        if bucket != int(bucket):  # buckets are stored by whole seconds: 0.5s divided by zero on every event
            raise ValueError(f"bucket: {self.bucket} is not a whole number of seconds (e.g. 15m, 1h, 1d)")
        if bucket > window:
            raise ValueError(f"bucket: {self.bucket} is longer than the window ({self.window})")
        if 86400 % bucket != 0 and bucket % 86400 != 0:
            raise ValueError(f"bucket: {self.bucket} must divide a day (e.g. 15m, 1h, 1d)")
        if window % bucket:
            raise ValueError(f"window: {self.window} is not a whole number of buckets ({self.bucket} each)")
        for i, t in enumerate(self.triggers):  # each trigger window is positive (Trigger checks it)
            if parse_duration(t.window) % bucket:
                raise ValueError(f"triggers[{i}].window: {t.window} is not a whole number of buckets "
                                 f"({self.bucket} each)")
        unit = 86400 if self.drift.seasonality == "day_of_week" else 3600
        if self.drift.seasonality != "none" and unit % bucket:
            raise ValueError(f"drift.seasonality: {self.drift.seasonality} needs buckets that divide "
                             f"{'a day' if unit == 86400 else 'an hour'} (bucket is {self.bucket})")
        for key, value in self.targets.items():
            problem = unknown_target(key) or value_problem(key, value)
            if problem:
                raise ValueError(f"targets.{key}: {problem}")
        slice_typo = misspelled_slice(self.slices, self.features)
        if slice_typo:
            raise ValueError(slice_typo)
        if self.kafka.align_within is not None and parse_duration(self.kafka.align_within) >= self.labels.horizon_s:
            raise ValueError(f"kafka.align_within: {self.kafka.align_within} is not shorter than labels.horizon "
                             f"({self.labels.horizon}): a partition that far ahead of another makes the other's "
                             "events past_horizon; leave it out for a quarter of the horizon")
        names = [t.name for t in self.triggers]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate trigger names {dupes}")

    @property
    def align_within_s(self) -> float:
        """kafka.align_within in seconds (default a quarter of labels.horizon)."""
        text = self.kafka.align_within
        return self.labels.horizon_s / 4 if text is None else parse_duration(text)

    @property
    def bucket_s(self) -> int:
        return int(parse_duration(self.bucket))

    @property
    def window_s(self) -> float:
        return parse_duration(self.window)


_DEFAULTS = msgspec.to_builtins(Config())
"""The built-in settings as plain data: a refused number's default is shown as an example."""


def from_dict(data: dict[str, Any] | None, origin: str = "config", text: str | None = None) -> Config:
    """Validate a config mapping (parsed from `text`, when given); raise ConfigError naming the offending field."""
    infinite = non_finite(data)
    if infinite is not None:
        where = f"field `{infinite[0]}`" if infinite[0] else "top level"
        raise ConfigError(f"{origin}: invalid {where}: {infinite[1]} is not a finite number (.inf, .nan, or beyond "
                          "±1.8e308)")
    data = whole_floats(Config, data or {})  # `max_features: 1e3` is 1000, as `--per-day 1e3` is
    try:
        return msgspec.convert(data, Config)
    except msgspec.ValidationError as err:
        field = field_path(err)
        msg = str(err).split(" - at `")[0]
        unknown = re.fullmatch(r"Object contains unknown field `(.*)`", msg)
        if unknown:
            raise ConfigError(f"{origin}: {unknown_field(Config, field, unknown.group(1))}") from None
        entry = dict_entry(Config, data, field, value_at)
        got = entry[1] if entry is not None else value_at(data, field)
        if msg.startswith("Invalid enum value"):  # msgspec names neither the allowed values nor the closest
            msg = enum_choices(Config, field, got) or msg
        if entry is not None:
            field = entry[0]
        plain = unquoted(str(err), data, text, field) if text is not None else None
        if plain is not None:
            _refuse_unquoted(*plain, origin)
        for pattern, help_ in _PATTERN_HELP.items():
            if repr(pattern) in msg:
                msg = f"{help_}, got {got!r}" + (duration_hint(str(got)) if "duration" in help_ else "")
        if isinstance(got, bool) and re.match(r"Expected `(int|float)", msg):  # `threshold: yes`
            msg = boolean_number(text, field, got, msg.startswith("Expected `int"), value_at(_DEFAULTS, field))
        elif msg == "Expected `int`, got `float`" and whole_number_hint(got):
            msg = whole_number_hint(got)
        if msg.startswith("Expected") and got is not None and repr(got) not in msg:
            msg = f"{msg} ({got!r})" if ", got" in msg else f"{msg}, got {got!r}"
        if msg.startswith("Expected `float`"):
            msg += percent_hint(data, field, got)
        msg = plain_kinds(msg)
        if isinstance(got, str) and msg.startswith("expected a mapping"):  # `labels:` then `  horizon:30d`
            msg += colon_hint(got)
        sub = re.match(r"^([\w.\[\]]+): (.*)$", msg, re.S)  # a section's own check names its field: `section.field`
        if sub:
            field = f"{field}.{sub.group(1)}" if field else sub.group(1)
            msg = sub.group(2)
        where = f"field `{field}`" if field else "top level"
        raise ConfigError(f"{origin}: invalid {where}: {msg}") from None


def _refuse_unquoted(field: str, line: str, quoted: Any, origin: str) -> None:
    """ConfigError for a number or boolean given as text (config_scalars): the quoted value's own error when that
    is refused at the same place too (`window: 7`), else the line saying how to quote it."""
    where = f"field `{field}`" if field else "top level"
    try:
        from_dict(quoted, origin)
    except ConfigError as err:
        if field and str(err).startswith(f"{origin}: invalid field `{field}`:"):
            raise
    raise ConfigError(f"{origin}: invalid {where}: {line}") from None


def load(path: str | os.PathLike[str] | None) -> Config:
    """Load and validate a YAML config file; None gives the (domain-neutral) defaults."""
    return load_named(path)[0]


def load_named(path: str | os.PathLike[str] | None) -> tuple[Config, frozenset[str]]:
    """The config and the top-level keys its file sets (so a command can tell `model: fraud` written in the file
    from the built-in default, which only applies when the database cannot tell which model is meant)."""
    if path is None:
        return Config(), frozenset()
    p = Path(path)
    try:
        raw = p.read_bytes()
        wide = wide_encoding(raw[:8])
        if wide is not None:  # a Windows editor's "Unicode": was "byte 0xff on line 1", or "character #x0000"
            raise ConfigError(f"config {p}: {wide[0]} text ({wide[1]}); the config is UTF-8: save it as UTF-8, or "
                              f"convert it: `iconv -f {wide[0]} -t UTF-8 {shell_word(str(p))} > "
                              f"{shell_word(str(p.with_name(p.stem + '-utf8' + p.suffix)))}`")
        text = raw.decode("utf-8")
    except OSError as err:
        raise ConfigError(f"config {p}: cannot read it: {err.strerror}") from None
    except UnicodeDecodeError as err:
        line = err.object[:err.start].count(b"\n") + 1
        raise ConfigError(f"config {p}: not UTF-8 text (byte 0x{err.object[err.start]:02x} on line {line})") from None
    try:
        data = load_yaml(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        hint = decimal_comma(text, mark.line + 1 if mark is not None else None)
        raise ConfigError(f"config {p}: not valid YAML{yaml_where(err)}{hint or events_hint(text)}") from None
    if data is None:  # empty, comments only, `---` or `null`: a truncated file or an empty ConfigMap key would
        # run on the built-in defaults, with no triggers, silently (`{}` still asks for the defaults explicitly)
        raise ConfigError(f"config {p}: holds no settings (empty, or comments only): write the settings, write {{}} "
                          "for the built-in defaults, or leave out --config")
    if data is not None and not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else "text" if isinstance(data, str) else "a single value"
        shown = repr(data) if len(repr(data)) <= 60 else repr(data)[:57] + "..."
        raise ConfigError(f"config {p}: top level must be a mapping of settings (`name: value` lines), got {kind} "
                          f"({shown}){colon_hint(text) or events_hint(text)}")
    try:
        return from_dict(data, f"config {p}", text), frozenset(str(k) for k in (data or {}))
    except ConfigError as err:
        raise ConfigError(_with_line(str(err), f"config {p}", text) + events_hint(text)) from None


def _with_line(message: str, origin: str, text: str) -> str:
    """`message` ('config c.yaml: invalid field `labels.horizon`: …') with the line of the field it names after the
    file ('config c.yaml, line 7: …'), so a long file's offending setting is found at once; as given when the field
    is not in the file (a default's cross-check) or the message names none."""
    m = re.match(rf"{re.escape(origin)}: (?:invalid|unknown) field `([^`]+)`", message)
    line = line_of(text, m.group(1)) if m else None
    hint = decimal_comma(text, line) if line is not None or "invalid top level" in message else ""
    return message + hint if line is None else f"{origin}, line {line}{message[len(origin):]}{hint}"
