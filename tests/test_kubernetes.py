"""deploy/kubernetes (issue 16 part 7): the core manifests validated against the Kubernetes OpenAPI schemas
(`kubernetes-validate`), the PrometheusRule's groups checked by `promtool check rules` and equal to the rules of
alerts/ (one source, `alerts render --check`), the ServiceMonitor and probes wired to the Service and container,
and the dashboards ConfigMaps generated from the same dashboards Grafana provisions in compose."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from driftline import cli
from driftline.triggers.mixin import DEFAULT

from services import require_binary

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "kubernetes"
EXAMPLE = ROOT / "driftline.example.yaml"
K8S_VERSION = "1.30"
CORE = ("deployment.yaml", "service.yaml", "secret.example.yaml", "grafana-dashboards.yaml")


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


def _one(name: str) -> dict[str, Any]:
    (doc,) = _docs(name)
    return doc


@pytest.mark.parametrize("name", CORE)
def test_core_manifests_are_valid_kubernetes_objects(name: str) -> None:
    """Deployment, Service, Secret and the dashboard ConfigMaps validate (strict: no unknown fields) against the
    Kubernetes schemas of a supported version."""
    for doc in _docs(name):
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_kubernetes_validation_catches_a_broken_manifest() -> None:
    """The schema check can fail: a misspelt probe field is rejected."""
    doc = _one("deployment.yaml")
    doc["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["periodSecond"] = 10
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_deployment_runs_driftline_with_probes_resources_and_secret() -> None:
    """`driftline run` on all interfaces, /healthz liveness (and start-up) and /readyz readiness on the metrics port,
    CPU/memory requests and a memory limit, non-root, and the database URL and Kafka credentials from the Secret."""
    pod = _one("deployment.yaml")["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["command"][:2] == ["driftline", "run"] and "0.0.0.0" in c["command"]
    port = {p["name"]: p["containerPort"] for p in c["ports"]}["metrics"]
    assert port == 9108
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert c["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert {"cpu", "memory"} <= set(c["resources"]["requests"]) and "memory" in c["resources"]["limits"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    secret = _one("secret.example.yaml")
    assert c["envFrom"] == [{"secretRef": {"name": secret["metadata"]["name"]}}]
    keys = set(secret["stringData"])
    assert {"DRIFTLINE_DB", "DRIFTLINE_KAFKA_BOOTSTRAP"} <= keys
    assert any(k.startswith("DRIFTLINE_KAFKA_OPT_SASL") and "PASSWORD" in k for k in keys)
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    config_dir = str(Path({e["name"]: e.get("value") for e in c["env"]}["DRIFTLINE_CONFIG"]).parent)
    volume = {v["name"]: v for v in pod["volumes"]}[mounts[config_dir]]
    kustomization = _one("kustomization.yaml")
    generated = {g["name"]: g["files"] for g in kustomization["configMapGenerator"]}
    assert volume["configMap"]["name"] in generated


def test_service_and_servicemonitor_select_the_pods_and_port() -> None:
    """The Service selects the Deployment's pods and names the metrics port; the ServiceMonitor selects the Service
    by label and scrapes that port at /metrics. The Service's name is the job the rules select."""
    deploy, service, monitor = _one("deployment.yaml"), _one("service.yaml"), _one("servicemonitor.yaml")
    pod_labels = deploy["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1" and monitor["kind"] == "ServiceMonitor"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]} and endpoint["path"] == "/metrics"
    assert service["metadata"]["name"] == DEFAULT.job


def test_kustomization_lists_files_that_exist() -> None:
    """Every resource and generated file of kustomization.yaml is in deploy/kubernetes."""
    k = _one("kustomization.yaml")
    for name in k["resources"] + [f for g in k["configMapGenerator"] for f in g["files"]]:
        assert (K8S / name.split("=")[-1]).is_file(), name
    assert set(k["resources"]) >= {"deployment.yaml", "service.yaml", "servicemonitor.yaml", "prometheusrule.yaml",
                                   "grafana-dashboards.yaml"}


def test_kubernetes_config_is_the_example_with_one_sender_per_trigger_alert() -> None:
    """The ConfigMap's driftline.yaml differs from the example only in `notify:`, and either driftline's notifier
    or the PrometheusRule's trigger alerts send (never both: one condition pages once)."""
    from driftline.config import load
    k8s, example = yaml.safe_load((K8S / "driftline.yaml").read_text()), yaml.safe_load(EXAMPLE.read_text())
    assert {k: v for k, v in k8s.items() if k != "notify"} == {k: v for k, v in example.items() if k != "notify"}
    notifier_sends = load(K8S / "driftline.yaml").notify.alertmanager_url is not None
    rules_send = any(r.get("alert") in ("RecallBelowTarget", "FprAboveTarget")
                     for g in _one("prometheusrule.yaml")["spec"]["groups"] for r in g["rules"])
    assert notifier_sends != rules_send, (notifier_sends, rules_send)


def test_prometheusrule_is_the_rendered_rules_of_alerts(tmp_path: Path, monkeypatch) -> None:
    """prometheusrule.yaml is exactly what `driftline alerts render --kubernetes` produces from the example's
    triggers and alerts/meta + recording rules (`--check`); its groups are those of the three rule files."""
    monkeypatch.chdir(ROOT)
    assert cli.main(["--config", str(EXAMPLE), "alerts", "render", "--out", "alerts/triggers.rules.yml",
                     "--kubernetes", "deploy/kubernetes/prometheusrule.yaml", "--check"]) == 0
    rule = _one("prometheusrule.yaml")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    files = [yaml.safe_load((ROOT / "alerts" / f).read_text())["groups"]
             for f in ("triggers.rules.yml", "meta.rules.yml", "recording.rules.yml")]
    assert rule["spec"]["groups"] == [g for groups in files for g in groups]
    stale = tmp_path / "prometheusrule.yaml"
    stale.write_text((K8S / "prometheusrule.yaml").read_text().replace("for: 15m", "for: 1m", 1))
    assert cli.main(["--config", str(EXAMPLE), "alerts", "render", "--out", "alerts/triggers.rules.yml",
                     "--kubernetes", str(stale), "--check"]) == 1


def test_prometheusrule_groups_pass_promtool_check_rules(tmp_path: Path) -> None:
    """The rule groups inside the PrometheusRule pass `promtool check rules`."""
    groups = _one("prometheusrule.yaml")["spec"]["groups"]
    path = tmp_path / "groups.rules.yml"
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False, allow_unicode=True))
    res = subprocess.run([require_binary("promtool"), "check", "rules", str(path)], capture_output=True, text=True,
                         timeout=60, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in groups)} rules found" in res.stdout


def test_render_for_another_job_retargets_every_selector(tmp_path: Path, monkeypatch) -> None:
    """`--job fraud-monitor` (a Service of another name) replaces the job selector in every meta and recording
    rule; a job name that is not a plain name is refused with exit 2."""
    monkeypatch.chdir(ROOT)
    out = tmp_path / "rule.yaml"
    assert cli.main(["--config", str(EXAMPLE), "alerts", "render", "--kubernetes", str(out),
                     "--job", "fraud-monitor"]) == 0
    text = out.read_text()
    assert 'job="driftline"' not in text and 'up{job="fraud-monitor"}' in text
    assert cli.main(["--config", str(EXAMPLE), "alerts", "render", "--kubernetes", str(out),
                     "--job", 'x"} or vector(1) #']) == 2


def test_dashboard_configmaps_hold_the_generated_dashboards() -> None:
    """grafana-dashboards.yaml holds one ConfigMap per dashboard, labelled for the Grafana sidecar, with the same
    JSON as deploy/grafana/dashboards (scripts/gen_dashboards.py --check covers both)."""
    spec = importlib.util.spec_from_file_location("gen_dashboards", ROOT / "scripts" / "gen_dashboards.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0
    maps = _docs("grafana-dashboards.yaml")
    dashboards = sorted((ROOT / "deploy" / "grafana" / "dashboards").glob("*.json"))
    assert len(maps) == len(dashboards)
    for cm, path in zip(sorted(maps, key=lambda m: next(iter(m["data"]))), dashboards):
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert cm["data"] == {path.name: path.read_text()}
