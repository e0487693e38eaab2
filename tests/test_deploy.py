"""The static on-call surface (issue 5): alert rules, Prometheus/Alertmanager configs, compose stack, Dockerfile
and Grafana dashboards, checked with the real promtool/amtool (Debian packages) and by parsing.

promtool/amtool tests skip when the tool is absent, and fail instead under DRIFTLINE_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from services import require_binary

ROOT = Path(__file__).resolve().parent.parent
ALERTS = ROOT / "alerts"
RULE_FILES = sorted(ALERTS.glob("*.rules.yml"))
TEST_FILES = sorted((ALERTS / "tests").glob("*.test.yml"))
PROM_CONFIG = ROOT / "deploy" / "prometheus" / "prometheus.yml"
AM_CONFIG = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
GRAFANA = ROOT / "deploy" / "grafana"
DASHBOARD_FILES = sorted((GRAFANA / "dashboards").glob("*.json"))
METRICS_DOC = ROOT / "docs" / "METRICS.md"
STABLE_UIDS = {"driftline-overview", "driftline-drift", "driftline-calibration", "driftline-ab", "driftline-pipeline"}
# Values substituted for dashboard variables when a query is checked as PromQL.
VARS = {"$model": "fraud", "$variant": ".*", "$window": "7d", "$feature": ".*", "$cluster": ".*", "$job": "driftline",
        "$instance": ".*"}


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """A tool's run, with a hang guard: `promtool test rules meta.test.yml` takes ~6 s of CPU, 35 s in a loaded CI
    run and past 60 s on a machine at load 7 (the guard then failed a passing rule test)."""
    return subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)


def _rules() -> list[dict[str, Any]]:
    return [r for f in RULE_FILES for g in _yaml(f)["groups"] for r in g["rules"]]


def _documented() -> dict[str, str]:
    """Metric and recording-rule name -> type, from the tables of docs/METRICS.md."""
    rows = re.findall(r"^\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \| (\w+) \|", METRICS_DOC.read_text(), flags=re.M)
    return dict(rows)


def _metric_names(expr: str) -> set[str]:
    """driftline series names in a PromQL expression (string literals removed, histogram suffixes folded)."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    names = set(re.findall(r"[a-zA-Z_:]*driftline[a-zA-Z0-9_:]*", bare))
    hist = {n for n, t in _documented().items() if t == "histogram"}
    return {re.sub(r"_(bucket|sum|count)$", "", n) if re.sub(r"_(bucket|sum|count)$", "", n) in hist else n
            for n in names}


def _compose() -> dict[str, Any]:
    return _yaml(ROOT / "docker-compose.yml")


def _binds(service: dict[str, Any]) -> list[tuple[Path, str]]:
    """(host path, container path) of the bind mounts of a compose service (named volumes excluded)."""
    out = []
    for vol in service.get("volumes", []):
        src, dst = vol.split(":")[:2]
        if src.startswith(("./", "/", "../")):
            out.append(((ROOT / src).resolve(), dst))
    return out


def _container_ports(service: dict[str, Any]) -> set[int]:
    """Ports a compose service listens on: published container ports, `expose`, and host:port in its command."""
    ports = {int(str(p).split(":")[-1].split("/")[0]) for p in service.get("ports", [])}
    ports |= {int(p) for p in service.get("expose", [])}
    command = " ".join(service.get("command", [])) if isinstance(service.get("command"), list) else ""
    ports |= {int(p) for p in re.findall(r"--port (\d+)", command)}
    return ports


def _host_path(service: dict[str, Any], container_path: str) -> Path | None:
    """Host file behind a container path, through the service's bind mounts."""
    for src, dst in _binds(service):
        if container_path == dst or container_path.startswith(dst.rstrip("/") + "/"):
            return src / container_path[len(dst):].lstrip("/")
    return None


# --- alert and recording rules -----------------------------------------------------------------------------

@pytest.mark.parametrize("rule_file", RULE_FILES, ids=lambda p: p.name)
def test_promtool_check_rules(rule_file: Path) -> None:
    """Every rule file passes `promtool check rules` (syntax, PromQL, templates)."""
    res = _run(require_binary("promtool"), "check", "rules", str(rule_file))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


@pytest.mark.parametrize("test_file", TEST_FILES, ids=lambda p: p.name)
def test_promtool_test_rules(test_file: Path) -> None:
    """Every unit-test file passes `promtool test rules` against the rule files it names."""
    res = _run(require_binary("promtool"), "test", "rules", str(test_file))
    assert res.returncode == 0, res.stdout + res.stderr


def test_expected_rule_files_and_alerts_exist() -> None:
    """The meta-alerts of issue 5, the fraud example's triggers and the recording rules are all defined."""
    assert {p.name for p in RULE_FILES} == {"meta.rules.yml", "recording.rules.yml", "triggers.rules.yml"}
    alerts = {r["alert"] for r in _rules() if "alert" in r}
    assert alerts >= {"DriftlineExporterDown", "DriftlineExporterAbsent", "DriftlineNoPredictions",
                      "DriftlineLabelsStalled", "DriftlineConsumerLagHigh", "DriftlineDeadLetterRateHigh",
                      "DriftlineNotifierFailing", "RecallBelowTarget", "FprAboveTarget"}


def test_every_alert_has_firing_and_not_firing_unit_tests() -> None:
    """Each alert is unit-tested at least once firing (non-empty exp_alerts) and once not firing."""
    firing: set[str] = set()
    quiet: set[str] = set()
    for path in TEST_FILES:
        for case in _yaml(path)["tests"]:
            for check in case.get("alert_rule_test", []):
                (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
    alerts = {r["alert"] for r in _rules() if "alert" in r}
    assert alerts - firing == set(), "alerts without a firing test"
    assert alerts - quiet == set(), "alerts without a not-firing test"


def test_every_recording_rule_has_a_unit_test() -> None:
    """Each recorded series is evaluated by some promql_expr_test."""
    tested = {c["expr"].strip() for p in TEST_FILES for t in _yaml(p)["tests"] for c in t.get("promql_expr_test", [])}
    records = {r["record"] for r in _rules() if "record" in r}
    assert records - tested == set()


def test_alert_conventions_and_runbooks() -> None:
    """CamelCase names, severity label, summary/description/runbook_url annotations, `for:`; runbook anchors exist."""
    doc = METRICS_DOC.read_text()
    anchors = {h.strip().lower() for h in re.findall(r"^### (\w+)\s*$", doc, flags=re.M)}
    for rule in (r for r in _rules() if "alert" in r):
        name = rule["alert"]
        assert re.fullmatch(r"(?:[A-Z][a-z0-9]+)+", name), name
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        assert {"summary", "description", "runbook_url"} <= set(rule["annotations"]), name
        assert re.fullmatch(r"\d+[smh]", rule["for"]), name
        anchor = rule["annotations"]["runbook_url"].split("#", 1)[1]
        assert anchor == name.lower() and anchor in anchors, name


def test_fraud_trigger_rules_have_the_agreed_lines() -> None:
    """triggers.rules.yml encodes recall < 0.70 and FPR > 0.08 over 7d with the n >= 30 guard (seed 000 step 6)."""
    rules = {r["alert"]: r for r in _yaml(ALERTS / "triggers.rules.yml")["groups"][0]["rules"]}
    recall, fpr = (" ".join(rules[n]["expr"].split()) for n in ("RecallBelowTarget", "FprAboveTarget"))
    whole = 'model="fraud", variant="all", window="7d"'     # the whole-model series (every arm and version)
    assert f"driftline_recall_ratio{{{whole}}} < 0.7 and" in recall
    assert f"driftline_window_positives{{{whole}}} >= 30" in recall
    assert f"driftline_fpr_ratio{{{whole}}} > 0.08 and" in fpr
    assert ") >= 30" in fpr and "driftline_window_labelled" in fpr
    assert rules["RecallBelowTarget"]["labels"]["severity"] == "critical"


def test_rule_metrics_and_recording_rules_match_the_metrics_doc() -> None:
    """Every driftline series a rule reads is documented, and the doc lists exactly the recorded series."""
    doc = _documented()
    used = set().union(*(_metric_names(r["expr"]) for r in _rules()))
    assert used - set(doc) == set()
    records = {r["record"] for r in _rules() if "record" in r}
    assert records == {n for n, t in doc.items() if t == "recording"}


# --- Prometheus and Alertmanager configs ---------------------------------------------------------------------

def test_prometheus_config_in_the_compose_layout(tmp_path: Path) -> None:
    """`promtool check config` on prometheus.yml laid out as compose mounts it; every rule file is loaded."""
    promtool = require_binary("promtool")
    service = _compose()["services"]["prometheus"]
    etc = "/etc/prometheus"
    for src, dst in _binds(service):
        if dst.startswith(etc + "/"):
            target = tmp_path / dst[len(etc) + 1:]
            target.parent.mkdir(parents=True, exist_ok=True)
            (shutil.copytree if src.is_dir() else shutil.copy)(src, target)
    res = _run(promtool, "check", "config", str(tmp_path / "prometheus.yml"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"SUCCESS: {len(RULE_FILES)} rule files found" in res.stdout
    for rule_file in RULE_FILES:
        assert f"alerts/{rule_file.name}" in res.stdout


def test_amtool_check_config() -> None:
    """alertmanager.yml passes `amtool check-config`."""
    res = _run(require_binary("amtool"), "check-config", str(AM_CONFIG))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


@pytest.mark.parametrize(("labels", "receiver"), [
    (["alertname=RecallBelowTarget", "severity=critical", "model=fraud"], "driftline-critical"),
    (["alertname=FprAboveTarget", "severity=warning", "model=fraud"], "driftline-webhook"),
    (["alertname=DriftlineExportersAllDown", "severity=critical", "job=driftline"], "driftline-critical"),
    (["alertname=DriftlineDatabaseUnreachableAll", "severity=critical", "job=driftline"], "driftline-critical"),
    (["alertname=DriftlineKafkaUnreachable", "severity=critical", "job=driftline"], "driftline-critical"),
    (["alertname=DriftlineConsumerStaleBatches", "severity=warning", "job=driftline"], "driftline-webhook"),
])
def test_alertmanager_routes(labels: list[str], receiver: str) -> None:
    """Critical alerts route to the critical receiver, warnings to the default one (`amtool config routes test`)."""
    res = _run(require_binary("amtool"), "config", "routes", "test", f"--config.file={AM_CONFIG}", *labels)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.split() == [receiver]


# --- docker-compose.yml and Dockerfile -------------------------------------------------------------------

def test_compose_mounted_files_exist() -> None:
    """Every bind-mounted host path in docker-compose.yml exists; named volumes are declared."""
    compose = _compose()
    for name, service in compose["services"].items():
        for src, _ in _binds(service):
            assert src.exists(), f"{name}: {src}"
        for vol in service.get("volumes", []):
            src = vol.split(":")[0]
            if not src.startswith(("./", "/", "../")):
                assert src in compose["volumes"], f"{name}: undeclared volume {src}"


def test_compose_agrees_with_prometheus_and_alertmanager_targets() -> None:
    """prometheus.yml scrape and alerting targets are compose services listening on those ports."""
    services = _compose()["services"]
    prom = _yaml(PROM_CONFIG)
    targets = [t for job in prom["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]]
    am_targets = [t for am in prom["alerting"]["alertmanagers"] for sc in am["static_configs"] for t in sc["targets"]]
    assert "driftline:9108" in targets and am_targets == ["alertmanager:9093"]
    for target in targets + am_targets:
        host, port = target.rsplit(":", 1)
        service = services["prometheus" if host == "localhost" else host]
        assert int(port) in _container_ports(service) | ({9090} if host == "localhost" else set()), target
    driftline_job = next(j for j in prom["scrape_configs"] if j["job_name"] == "driftline")
    assert driftline_job["static_configs"][0]["targets"] == ["driftline:9108"]


def test_compose_services_wiring() -> None:
    """Kafka KRaft, topics one-shot, PostgreSQL 16, driftline/simulator commands and the Grafana datasource."""
    services = _compose()["services"]
    kafka = services["kafka"]
    assert re.fullmatch(r"apache/kafka:3\.9\.\d+", kafka["image"])
    assert "controller" in kafka["environment"]["KAFKA_PROCESS_ROLES"]
    advertised = kafka["environment"]["KAFKA_ADVERTISED_LISTENERS"]
    assert services["postgres"]["image"] == "postgres:16"
    assert services["topics"]["command"] == ["driftline", "topics", "create", "--kafka", "kafka:9092",
                                             "--partitions", "6"]
    run = services["driftline"]["command"]
    assert run[:4] == ["driftline", "run", "--kafka", "kafka:9092"]
    assert " --host 0.0.0.0 --port 9108" in " ".join(run)   # the exporter defaults to loopback
    assert services["simulator"]["command"] == ["driftline", "simulate", "--kafka", "kafka:9092", "--rate", "500"]
    for name in ("topics", "driftline", "simulator"):
        cmd = services[name]["command"]
        assert cmd[cmd.index("--kafka") + 1] in advertised, name
    for name in ("topics", "driftline", "simulator"):
        config = _host_path(services[name], services[name]["environment"]["DRIFTLINE_CONFIG"])
        assert config is not None and config.is_file(), name
    db = urlsplit(services["driftline"]["environment"]["DRIFTLINE_DB"])
    assert db.scheme == "postgresql+psycopg" and db.hostname == "postgres" and db.port == 5432
    assert db.username == services["postgres"]["environment"]["POSTGRES_USER"]
    ds = _yaml(GRAFANA / "provisioning" / "datasources" / "prometheus.yml")["datasources"][0]
    url = urlsplit(ds["url"])
    assert ds["type"] == "prometheus" and url.port in _container_ports(services[url.hostname]) | {9090}
    assert url.hostname == "prometheus"


def test_compose_healthchecks_and_depends_on_conditions() -> None:
    """Long-running services have healthchecks; depends_on uses conditions that match the dependency's kind."""
    services = _compose()["services"]
    for name, service in services.items():
        one_shot = service.get("restart") == "no"
        if not one_shot and (service.get("ports") or name in {"kafka", "postgres"}):
            assert "test" in service.get("healthcheck", {}), f"{name} has no healthcheck"
        deps = service.get("depends_on", {})
        assert isinstance(deps, dict), f"{name}: depends_on must use conditions"
        for dep, spec in deps.items():
            condition = spec["condition"]
            if condition == "service_healthy":
                assert "test" in services[dep].get("healthcheck", {}), f"{name} waits on {dep} health"
            else:
                assert condition == "service_completed_successfully", f"{name} -> {dep}"
                assert services[dep].get("restart") == "no", f"{dep} must be one-shot"
    assert services["driftline"]["depends_on"] == {
        "postgres": {"condition": "service_healthy"}, "kafka": {"condition": "service_healthy"},
        "topics": {"condition": "service_completed_successfully"}}
    assert services["topics"]["depends_on"] == {"kafka": {"condition": "service_healthy"}}


def test_compose_publishes_only_on_loopback_and_grafana_provisioning() -> None:
    """Published ports bind 127.0.0.1; Grafana's provisioning, dashboards and home dashboard resolve to repo files."""
    services = _compose()["services"]
    for name, service in services.items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name}: {port}"
    grafana = services["grafana"]
    provisioning = _host_path(grafana, "/etc/grafana/provisioning")
    assert provisioning == (GRAFANA / "provisioning").resolve()
    provider = _yaml(GRAFANA / "provisioning" / "dashboards" / "driftline.yml")["providers"][0]
    assert _host_path(grafana, provider["options"]["path"]) == (GRAFANA / "dashboards").resolve()
    home = _host_path(grafana, grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
    assert home is not None and home.is_file()
    env = grafana["environment"]
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "true" and env["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"


def test_dockerfile() -> None:
    """python:3.11-slim, `pip install .`, a non-root user, port 9108 and a /healthz HEALTHCHECK."""
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\s*$", text, flags=re.M)
    assert re.search(r"^RUN pip install \.", text, flags=re.M)
    users = re.findall(r"^USER (\S+)", text, flags=re.M)
    assert users and users[-1] not in {"root", "0"}
    assert re.search(r"^EXPOSE 9108\s*$", text, flags=re.M)
    assert re.search(r"^HEALTHCHECK .*\n?.*127\.0\.0\.1:9108/healthz", text, flags=re.M)
    for line in re.findall(r"^COPY (.+)$", text, flags=re.M):
        for src in [w for w in line.split() if not w.startswith("--")][:-1]:
            assert (ROOT / src).exists(), src


# --- Grafana dashboards ------------------------------------------------------------------------------------

def _dashboards() -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in DASHBOARD_FILES}


def _panels(dash: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in dash["panels"]:
        out.extend(p.get("panels", []) if p["type"] == "row" else [p])
    return out


def _queries(dash: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard: panel targets and query variables."""
    exprs = [t["expr"] for p in _panels(dash) for t in p["targets"]]
    exprs += [v["query"] for v in dash["templating"]["list"] if v["type"] == "query"]
    return exprs


def test_dashboards_are_generated_by_the_script() -> None:
    """The committed JSON is exactly what scripts/gen_dashboards.py produces (no hand edits drift away)."""
    spec = importlib.util.spec_from_file_location("gen_dashboards", ROOT / "scripts" / "gen_dashboards.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rendered = module.render_all()
    assert sorted(rendered) == [p.name for p in DASHBOARD_FILES]
    for name, text in rendered.items():
        assert (GRAFANA / "dashboards" / name).read_text() == text, name


def test_dashboard_uids_are_stable_and_unique() -> None:
    """Five dashboards with the agreed uids, each stored as <uid>.json."""
    dashes = _dashboards()
    uids = [d["uid"] for d in dashes.values()]
    assert sorted(uids) == sorted(STABLE_UIDS)
    assert all(name == f"{d['uid']}.json" for name, d in dashes.items())


def test_dashboard_variables() -> None:
    """$datasource (prometheus), $model and $variant (label_values) on every dashboard; queries use the datasource."""
    for name, dash in _dashboards().items():
        variables = {v["name"]: v for v in dash["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
        for var in ("model", "variant"):
            assert variables[var]["type"] == "query", name
            assert variables[var]["query"].startswith("label_values("), name
            assert variables[var]["datasource"]["uid"] == "${datasource}", name
        assert variables["variant"]["includeAll"] and variables["variant"]["allValue"] == ".*"
        for panel in _panels(dash):
            assert panel["datasource"]["uid"] == "${datasource}", (name, panel["title"])
            assert all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"]), panel["title"]


def test_every_panel_has_unit_description_and_no_overlap() -> None:
    """Each panel has a unit and a description, at least one query, and panels do not overlap on the grid."""
    for name, dash in _dashboards().items():
        cells: dict[tuple[int, int], str] = {}
        for panel in _panels(dash):
            assert panel["fieldConfig"]["defaults"].get("unit"), (name, panel["title"])
            assert len(panel.get("description", "")) > 20, (name, panel["title"])
            assert panel["targets"], (name, panel["title"])
            g = panel["gridPos"]
            assert g["x"] + g["w"] <= 24, (name, panel["title"])
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    assert (x, y) not in cells, (name, panel["title"], cells.get((x, y)))
                    cells[(x, y)] = panel["title"]


def test_dashboard_metrics_are_documented() -> None:
    """Every driftline series a panel or variable queries is listed in docs/METRICS.md."""
    doc = set(_documented())
    for name, dash in _dashboards().items():
        used = set().union(*(_metric_names(q) for q in _queries(dash)))
        assert used, name
        assert used - doc == set(), name


def test_dashboards_cover_the_issue() -> None:
    """Overview, Drift, Calibration, A/B and Pipeline show the series issue 5 asks for."""
    needed = {
        "driftline-overview.json": {"driftline_recall_ratio", "driftline_recall_lower_ratio",
                                    "driftline_recall_upper_ratio", "driftline_fpr_ratio", "driftline_precision_ratio",
                                    "driftline_trigger_threshold", "driftline_alert_rate_ratio",
                                    "driftline_label_coverage_ratio", "driftline_label_delay_seconds",
                                    "driftline_trigger_state"},
        "driftline-drift.json": {"driftline_feature_psi", "driftline_score_psi"},
        "driftline-calibration.json": {"driftline_ece", "driftline_brier_score", "driftline_log_loss"},
        "driftline-ab.json": {"driftline_recall_lower_ratio", "driftline_fpr_upper_ratio",
                              "driftline_precision_ratio"},
        "driftline-pipeline.json": {"job_type:driftline_events:rate5m", "driftline_consumer_lag_messages",
                                    "job_reason:driftline_dead_letters:rate5m", "job_type:driftline_duplicates:rate5m",
                                    "job:driftline_batch_duration_seconds:quantile_rate5m"},
    }
    for name, dash in _dashboards().items():
        used = set().union(*(_metric_names(q) for q in _queries(dash)))
        assert needed[name] <= used, (name, needed[name] - used)
    ab = _dashboards()["driftline-ab.json"]
    assert any(p.get("repeat") == "variant" for p in _panels(ab))


def test_dashboard_queries_parse_as_promql(tmp_path: Path) -> None:
    """Every panel and variable query, with variables substituted, is valid PromQL (`promtool check rules`)."""
    promtool = require_binary("promtool")
    rules = []
    for name, dash in _dashboards().items():
        for i, expr in enumerate(_queries(dash)):
            if expr.startswith("label_values("):
                metric = expr[len("label_values("):].rsplit(",", 1)[0]
                expr = f"count({metric})"
            for var, value in VARS.items():
                expr = expr.replace(var, value)
            assert "$" not in expr, expr
            rules.append({"record": f"check:{name.removesuffix('.json').replace('-', '_')}:q{i}", "expr": expr})
    path = tmp_path / "dashboard_queries.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard-queries", "rules": rules}]}))
    res = _run(promtool, "check", "rules", str(path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"SUCCESS: {len(rules)} rules found" in res.stdout



# --- the monitoring mixin: selectors, aggregations, legends, empty panels (issue 16 part 5) -------------------

_SERIES = re.compile(r"\b((?:[a-z_]+:)?driftline_[a-zA-Z0-9_:]*|up|ALERTS)\b(\{[^}]*\})?")
_AGG = re.compile(r"\b(sum|min|max|avg|count|stddev|group)\s*\(")


def _selectors(expr: str) -> list[tuple[str, str]]:
    """(series name, its `{...}` selector or '') of every series an expression reads."""
    return [(m.group(1), m.group(2) or "") for m in _SERIES.finditer(expr)]


def _targets(dash: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(p["title"], t) for p in _panels(dash) for t in p["targets"]]


def test_every_dashboard_query_carries_the_job_instance_and_cluster_selector() -> None:
    """Every series a panel, variable or annotation reads is filtered by $cluster/$job/$instance (the mixin's
    `_config`), so a second driftline job or a replica set never mixes into a panel; the variables exist and $job
    defaults to the job the rule files select."""
    from driftline.triggers.mixin import DEFAULT
    for name, dash in _dashboards().items():
        variables = {v["name"]: v for v in dash["templating"]["list"]}
        assert {"cluster", "job", "instance"} <= set(variables), name
        assert variables["job"]["current"]["value"] == [DEFAULT.job], name
        exprs = _queries(dash) + [a["expr"] for a in dash["annotations"]["list"] if "expr" in a]
        for expr in exprs:
            found = _selectors(expr)
            assert found, (name, expr)
            for series, sel in found:
                if re.fullmatch(r"label_values\(driftline_build_info[^,]*, (cluster|job)\)", expr):
                    continue   # the $cluster and $job variables themselves
                assert 'job=~"$job"' in sel, (name, series, expr)
                if not series.startswith(("job", "model_severity", "ALERTS")):   # recorded: no instance
                    assert 'instance=~"$instance"' in sel or "label_values" in expr, (name, series, expr)


def test_dashboard_aggregations_say_what_they_keep_and_legends_use_kept_labels() -> None:
    """No bare `sum(...)`/`max(...)` (every aggregation names `by` or `without`), and a legend only uses labels the
    outermost `by (...)` keeps (the A/B traffic-share legend used model_version, which `sum by (variant)` drops)."""
    for name, dash in _dashboards().items():
        for title, t in _targets(dash):
            assert not _AGG.search(t["expr"]), (name, title, t["expr"])
            kept = re.match(r"^\s*\w+ by \(([^)]*)\)", t["expr"])
            if kept:
                legend = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", t.get("legendFormat", "")))
                assert legend <= {x.strip() for x in kept.group(1).split(",")}, (name, title, legend)


def test_trigger_lines_select_the_trigger_metric_not_a_name_pattern() -> None:
    """The trigger line (refId T) of a ratio panel selects driftline_trigger_threshold{metric="<metric>"}: a
    precision trigger called `ppv_floor` is drawn; a recall trigger is never drawn on the precision panel."""
    seen = set()
    for name, dash in _dashboards().items():
        for title, t in _targets(dash):
            if t["refId"] == "T":
                metric = re.search(r'metric="(\w+)"', t["expr"])
                assert metric and "trigger=~" not in t["expr"], (name, title, t["expr"])
                seen.add(metric.group(1))
    assert seen == {"recall", "fpr", "precision"}


def test_panels_that_can_be_empty_say_why() -> None:
    """A panel whose query is legitimately empty (no trigger configured, no Kafka consumer under `serve`, no
    notification receiver, no batch yet) shows an explicit text instead of "No data"."""
    needs = {"driftline-overview.json": {"Triggers firing", "Triggers with insufficient data",
                                         "Trigger states", "Trigger firing history"},
             "driftline-pipeline.json": {"Consumer lag", "Batch duration", "Notifications"}}
    for name, titles in needs.items():
        panels = {p["title"]: p for p in _panels(_dashboards()[name])}
        for title in titles:
            no_value = panels[title]["fieldConfig"]["defaults"].get("noValue", "")
            assert len(no_value) > 8, (name, title)


def test_hand_written_rules_select_the_mixin_job() -> None:
    """Every series read by the meta-alerts and recording rules carries the mixin's job selector (`job="driftline"`,
    driftline.triggers.mixin.DEFAULT), so `alerts render --job` re-targets all of them and no rule reads another
    job's series; aggregations keep the cluster label where they keep job."""
    from driftline.triggers.mixin import DEFAULT
    for path in (ALERTS / "meta.rules.yml", ALERTS / "recording.rules.yml"):
        for group in _yaml(path)["groups"]:
            for rule in group["rules"]:
                for series, sel in _selectors(rule["expr"]):
                    if series.startswith(("job", "model_severity")) or series == "ALERTS":
                        continue
                    if (rule.get("alert"), series, sel) == ("DriftlineExporterAbsent", "up", ""):
                        # its start-up gate, deliberately any job: Prometheus scraped something a minute ago
                        assert re.search(r"and on \(\)\s*count\(up offset 1m\) > 0", rule["expr"]), rule["expr"]
                        continue
                    assert DEFAULT.selector in sel, (path.name, rule.get("alert") or rule["record"], series)
                for kept in re.findall(r"\bby \(([^)]*)\)", rule["expr"]):
                    labels = {x.strip() for x in kept.split(",")}
                    assert "job" not in labels or "cluster" in labels, (path.name, kept)
