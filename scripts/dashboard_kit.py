"""Building blocks of the Grafana dashboards scripts/gen_dashboards.py writes: the shared label selectors, panels,
bands, stats, template variables and the dashboard frame (split out so each file stays small)."""

from __future__ import annotations

from typing import Any

from driftline.triggers.mixin import DEFAULT as CONFIG   # the mixin's `_config`: job, instance, cluster labels

DS: dict[str, str] = {"type": "prometheus", "uid": "${datasource}"}
SEL = CONFIG.dashboard_selector           # every query: cluster=~"$cluster", job=~"$job", instance=~"$instance"
JOB = f'{CONFIG.cluster_label}=~"$cluster", {CONFIG.job_label}=~"$job"'   # recorded series (aggregated per job)
MOD = f'{SEL}, model="$model"'
M = f'{MOD}, variant=~"$variant", window="$window"'   # windowed series of the selected model and arms
MW = f'{MOD}, window="$window"'
ALL = f'{MOD}, variant="all", window="$window"'       # the exporter's whole-model group (every arm)
REPLICAS = f"{CONFIG.cluster_label}, {CONFIG.job_label}, {CONFIG.instance_label}"
"""Labels that only say which replica exported a database-derived series (every replica exports the same)."""
LOWER, UPPER = "lower 95 %", "upper 95 %"
Panel = dict[str, Any]


# --- building blocks --------------------------------------------------------------------------------------

def target(expr: str, legend: str = "", ref: str = "A", *, instant: bool = False) -> dict[str, Any]:
    """One Prometheus query of a panel (instant queries are returned as a table)."""
    t: dict[str, Any] = {"datasource": DS, "expr": expr, "legendFormat": legend or "__auto", "refId": ref,
                         "range": not instant, "instant": instant, "editorMode": "code"}
    if instant:
        t["format"] = "table"
    return t


def panel(kind: str, title: str, description: str, unit: str, targets: list[dict[str, Any]],
          pos: tuple[int, int, int, int], *, min_: float | None = None, max_: float | None = None,
          decimals: int | None = None, custom: dict[str, Any] | None = None, overrides: list[Any] | None = None,
          thresholds: list[tuple[float | None, str]] | None = None, mappings: list[Any] | None = None,
          options: dict[str, Any] | None = None, no_value: str | None = None, **extra: Any) -> Panel:
    """A panel with a unit, a description and grid position (x, y, w, h); ids are set by `dashboard`."""
    defaults: dict[str, Any] = {"unit": unit, "custom": custom or {}, "mappings": mappings or [],
                                "thresholds": {"mode": "absolute", "steps": [
                                    {"color": c, "value": v} for v, c in (thresholds or [(None, "green")])]}}
    for key, val in (("min", min_), ("max", max_), ("decimals", decimals), ("noValue", no_value)):
        if val is not None:
            defaults[key] = val
    x, y, w, h = pos
    p: Panel = {"type": kind, "title": title, "description": description, "datasource": DS,
                "gridPos": {"x": x, "y": y, "w": w, "h": h}, "targets": targets,
                "fieldConfig": {"defaults": defaults, "overrides": overrides or []}, "options": options or {}}
    p.update(extra)
    return p


def ts_custom(*, thresholds_style: str = "off") -> dict[str, Any]:
    """Time-series line style; thresholds_style 'dashed' draws the threshold steps as lines."""
    return {"drawStyle": "line", "lineWidth": 2, "fillOpacity": 0, "showPoints": "never", "spanNulls": False,
            "thresholdsStyle": {"mode": thresholds_style}}


def timeseries(title: str, description: str, unit: str, targets: list[dict[str, Any]],
               pos: tuple[int, int, int, int], *, thresholds_style: str = "off", **kw: Any) -> Panel:
    """A time-series panel with a table legend showing the last value."""
    opts = {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull"]},
            "tooltip": {"mode": "multi", "sort": "none"}}
    return panel("timeseries", title, description, unit, targets, pos,
                 custom=ts_custom(thresholds_style=thresholds_style), options=opts, **kw)


def override(matcher_id: str, matcher_opt: str, props: dict[str, Any]) -> dict[str, Any]:
    """A field override, e.g. ('byName', 'upper 95 %', {'custom.fillBelowTo': 'lower 95 %'})."""
    return {"matcher": {"id": matcher_id, "options": matcher_opt},
            "properties": [{"id": k, "value": v} for k, v in props.items()]}


def band_overrides() -> list[dict[str, Any]]:
    """Interval bounds drawn as a shaded band (upper filled down to lower) and the trigger line dashed red."""
    return [
        override("byName", UPPER, {"custom.fillBelowTo": LOWER, "custom.lineWidth": 0, "custom.fillOpacity": 25,
                                   "color": {"mode": "fixed", "fixedColor": "blue"}}),
        override("byName", LOWER, {"custom.lineWidth": 0, "color": {"mode": "fixed", "fixedColor": "blue"}}),
        override("byFrameRefID", "T", {"custom.lineStyle": {"fill": "dash", "dash": [10, 10]},
                                       "color": {"mode": "fixed", "fixedColor": "red"}}),
    ]


def ratio_band(title: str, metric: str, description: str, pos: tuple[int, int, int, int], *,
               trigger: str | None = None) -> Panel:
    """Estimate of driftline_<metric>_ratio, its 95 % interval band and, if given, the trigger line.

    Repeated per selected variant (one full-width panel per arm): a band pairs series by name, so one arm each.
    """
    targets = [target(f"driftline_{metric}_ratio{{{M}}}", metric.replace("_", " "), "A"),
               target(f"driftline_{metric}_lower_ratio{{{M}}}", LOWER, "B"),
               target(f"driftline_{metric}_upper_ratio{{{M}}}", UPPER, "C")]
    if trigger:   # the line of every trigger judging this metric (any name), once however many replicas export it
        targets.append(target(f'max by (trigger) (driftline_trigger_threshold{{{MOD}, metric="{trigger}"}})',
                              "trigger {{trigger}}", "T"))
    return timeseries(f"{title} — $variant", description, "percentunit", targets, pos, min_=0, max_=1,
                      overrides=band_overrides(), repeat="variant", repeatDirection="h", maxPerRow=4)


def by_variant(title: str, expr: str, description: str, unit: str, pos: tuple[int, int, int, int],
               legend: str = "{{variant}} {{model_version}}", **kw: Any) -> Panel:
    """One line per A/B arm (estimates only, same axis, for comparison); the legend names only kept labels."""
    return timeseries(title, description, unit, [target(expr, legend)], pos, **kw)


def stat(title: str, expr: str, description: str, unit: str, pos: tuple[int, int, int, int],
         thresholds: list[tuple[float | None, str]] | None = None, mappings: list[Any] | None = None,
         no_value: str | None = None) -> Panel:
    """A single-number panel (last value)."""
    opts = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "value", "graphMode": "area", "textMode": "auto", "justifyMode": "auto"}
    return panel("stat", title, description, unit, [target(expr, title)], pos, thresholds=thresholds,
                 mappings=mappings, options=opts, no_value=no_value)


def value_map(pairs: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
    """Grafana value mapping: raw value -> (text, colour)."""
    return [{"type": "value", "options": {k: {"text": t, "color": c, "index": i}
                                          for i, (k, (t, c)) in enumerate(pairs.items())}}]


def template_vars(extra: list[dict[str, Any]] | None = None, variant: str = "all") -> dict[str, Any]:
    """$datasource, the mixin's $cluster/$job/$instance, $model, $variant (multi, All = .*; default `variant`) and
    $window, plus dashboard-specific ones.

    The default variant "all" is the exporter's whole-model group; "$__all" selects every arm. $job defaults to
    the job the rule files select; All of $job or $instance is the list of driftline's own (never `.*`, which
    would pull every scrape target into `up`); All of $cluster is `.*`, which also matches no cluster label.
    """
    def query_var(name: str, label: str, query: str, *, multi: bool, current: str | None = None,
                  all_value: str | None = ".*") -> dict[str, Any]:
        v: dict[str, Any] = {"type": "query", "name": name, "label": label, "datasource": DS, "query": query,
                             "definition": query, "refresh": 2, "sort": 1, "multi": multi, "includeAll": multi,
                             "hide": 0, "regex": "", "options": []}
        if multi:
            if all_value is not None:
                v["allValue"] = all_value
            text = "All" if current == "$__all" else current
            v["current"] = {"selected": True, "text": [text], "value": [current]}
        else:
            v["current"] = {"selected": True, "text": current, "value": current} if current else {}
        return v
    return {"list": [
        {"type": "datasource", "name": "datasource", "label": "Data source", "query": "prometheus", "hide": 0,
         "refresh": 1, "regex": "", "current": {}, "options": []},
        query_var("cluster", "Cluster", f"label_values(driftline_build_info, {CONFIG.cluster_label})",
                  multi=True, current="$__all"),
        query_var("job", "Job", f'label_values(driftline_build_info{{{CONFIG.cluster_label}=~"$cluster"}}, '
                  f'{CONFIG.job_label})', multi=True, current=CONFIG.job, all_value=None),
        query_var("instance", "Instance", f"label_values(driftline_build_info{{{JOB}}}, {CONFIG.instance_label})",
                  multi=True, current="$__all", all_value=None),
        query_var("model", "Model", f"label_values(driftline_window_predictions{{{SEL}}}, model)", multi=False),
        query_var("variant", "Variant", f"label_values(driftline_window_predictions{{{MOD}}}, variant)",
                  multi=True, current=variant),
        query_var("window", "Window", f"label_values(driftline_window_predictions{{{MOD}}}, window)",
                  multi=False, current="7d"),
        *(extra or []),
    ]}


MODEL_ALERTS = 'model="$model"'
"""The default `alerts_of`: the selected model's alerts (its triggers, and meta-alerts about its setup)."""


def alert_marks(alerts_of: str) -> str:
    """The 'Firing alerts' annotation query: Prometheus's firing alerts, and on a model's dashboards also its
    triggers firing in driftline's evaluator, once per trigger. With notify.alertmanager_url set driftline's
    notifier pages and the rendered rules leave the triggers out, so ALERTS held none (on-call tryout: the trigger
    paged while the Overview marked nothing)."""
    alerts = f'ALERTS{{alertstate="firing", {JOB}, {alerts_of}}}'
    if alerts_of != MODEL_ALERTS:
        return alerts
    keep = f"{CONFIG.cluster_label}, {CONFIG.job_label}, model, trigger"
    evaluator = (f'label_replace(max by ({keep}, severity) (driftline_trigger_firing{{{MOD}}} == 1), '
                 '"alertname", "$1", "trigger", "(.+)")')
    return f"{alerts}\nor on ({keep})\n{evaluator}"


def dashboard(uid: str, title: str, description: str, panels: list[Panel],
              extra_vars: list[dict[str, Any]] | None = None, time_from: str = "now-24h",
              variant: str = "all", alerts_of: str = MODEL_ALERTS, alert_tags: str = "severity,trigger",
              ) -> dict[str, Any]:
    """A whole dashboard with stable uid, the shared variables and links to the other driftline dashboards.

    `alerts_of` selects the firing alerts marked on its time axis: the model's (trigger) alerts by default."""
    for i, p in enumerate(panels, start=1):
        p["id"] = i
    return {
        "uid": uid, "title": title, "description": description, "tags": ["driftline"], "timezone": "utc",
        "editable": True, "graphTooltip": 1, "schemaVersion": 39, "version": 1, "refresh": "30s",
        "time": {"from": time_from, "to": "now"}, "fiscalYearStartMonth": 0, "liveNow": False,
        "links": [{"type": "dashboards", "tags": ["driftline"], "asDropdown": True, "title": "driftline",
                   "includeVars": True, "keepTime": True}],
        "annotations": {"list": [
            {"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True,
             "hide": True, "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts",
             "type": "dashboard"},
            {"datasource": DS, "enable": True, "iconColor": "red", "name": "Firing alerts",
             "expr": alert_marks(alerts_of), "step": "60s",
             "titleFormat": "{{alertname}}", "tagKeys": alert_tags, "useValueForTime": False},
        ]},
        "templating": template_vars(extra_vars, variant),
        "panels": panels,
    }
