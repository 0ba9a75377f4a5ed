"""charts/tablequeue without a cluster: helm lint, ct lint, kubeconform on what it renders (strict,
with the real schemas of Kubernetes and of the CRDs), and the files it must keep equal to their
single source (the CRD, the operator's RBAC, the dashboard)."""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.support.deploy_tools import CHART, REPO, DeployTools

from .helm import REQUIRED_VALUES, by_kind, documents, run, template, tool_env

VARIANTS = {
    "defaults": [],
    "everything-off": [
        "--set",
        "api.enabled=false",
        "--set",
        "monitoring.serviceMonitors.operator=false",
        "--set",
        "monitoring.podMonitor.workers=false",
        "--set",
        "monitoring.prometheusRule.enabled=false",
        "--set",
        "monitoring.grafanaDashboard.enabled=false",
        "--set",
        "prometheusAdapterRules.enabled=false",
    ],
    "namespaced-peering": [
        "--set",
        "operator.watchNamespaces={orders,billing}",
        "--set",
        "operator.replicas=2",
        "--set",
        "api.tokensSecret=api-tokens",
        "--set",
        "monitoring.podMonitor.namespaces={orders}",
        "--set",
        "imagePullSecrets[0].name=registry",
    ],
}


def test_chart_helm_lint(deploy_tools: DeployTools, tmp_path: Path) -> None:
    out = run(
        [deploy_tools.helm, "lint", "--strict", CHART, *REQUIRED_VALUES],
        tool_env(deploy_tools, tmp_path),
    )
    assert "1 chart(s) linted, 0 chart(s) failed" in out


def test_chart_ct_lint(deploy_tools: DeployTools, tmp_path: Path) -> None:
    """chart-testing's lint: Chart.yaml against its schema (yamale), yamllint of Chart.yaml and
    values.yaml, helm lint with each ci/*-values.yaml."""
    out = run(
        [
            deploy_tools.ct,
            "lint",
            "--charts",
            CHART,
            "--chart-yaml-schema",
            deploy_tools.ct_config / "chart_schema.yaml",
            "--lint-conf",
            deploy_tools.ct_config / "lintconf.yaml",
            "--validate-maintainers=false",
            "--check-version-increment=false",
        ],
        tool_env(deploy_tools, tmp_path),
    )
    assert "All charts linted successfully" in out


def test_chart_values_schema_refuses_a_typo(deploy_tools: DeployTools, tmp_path: Path) -> None:
    result = subprocess.run(
        [
            str(deploy_tools.helm),
            "template",
            "tq",
            str(CHART),
            *REQUIRED_VALUES,
            "--set",
            "operator.intervall=5",
        ],
        capture_output=True,
        text=True,
        env=tool_env(deploy_tools, tmp_path),
        check=False,
    )
    assert result.returncode != 0
    assert "intervall" in result.stderr, result.stderr


def test_chart_api_needs_its_database_secret(deploy_tools: DeployTools, tmp_path: Path) -> None:
    result = subprocess.run(
        [str(deploy_tools.helm), "template", "tq", str(CHART)],
        capture_output=True,
        text=True,
        env=tool_env(deploy_tools, tmp_path),
        check=False,
    )
    assert result.returncode != 0
    assert "api.database.secretRef.name" in result.stderr


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_chart_renders_objects_kubeconform_accepts(
    deploy_tools: DeployTools, tmp_path: Path, variant: str
) -> None:
    """Every rendered object and the CRD against the strict schemas (no unknown field anywhere)."""
    rendered = template(deploy_tools, tmp_path, "--include-crds", *VARIANTS[variant])
    queue_schemas = deploy_tools.crd_schemas(tmp_path / "schemas", REPO / "crds" / "queue.yaml")
    out = run(
        [
            deploy_tools.kubeconform,
            "-strict",
            "-summary",
            "-schema-location",
            deploy_tools.kubeconform_schema_location(deploy_tools.schemas),
            "-schema-location",
            deploy_tools.kubeconform_schema_location(queue_schemas),
            "-",
        ],
        tool_env(deploy_tools, tmp_path),
        stdin=rendered,
    )
    count = len(documents(rendered))
    assert f"Summary: {count} resources found parsing stdin - Valid: {count}," in out, out


def test_chart_kubeconform_refuses_an_unknown_field(
    deploy_tools: DeployTools, tmp_path: Path
) -> None:
    """The schemas are strict: the check above could fail."""
    broken = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "x"},
        "spec": {"selector": {}, "endpoints": [{"port": "metrics", "honourLabels": True}]},
    }
    result = subprocess.run(
        [
            str(deploy_tools.kubeconform),
            "-strict",
            "-schema-location",
            deploy_tools.kubeconform_schema_location(deploy_tools.schemas),
            "-",
        ],
        input=json.dumps(broken),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "honourLabels" in result.stdout


def test_chart_objects(deploy_tools: DeployTools, tmp_path: Path) -> None:
    objects = by_kind(template(deploy_tools, tmp_path))
    assert sorted(objects) == [
        ("ClusterRole", "tq-tablequeue-operator"),
        ("ClusterRoleBinding", "tq-tablequeue-operator"),
        ("ConfigMap", "tq-tablequeue-adapter-rules"),
        ("ConfigMap", "tq-tablequeue-dashboard"),
        ("Deployment", "tq-tablequeue-api"),
        ("Deployment", "tq-tablequeue-operator"),
        ("PodMonitor", "tq-tablequeue-workers"),
        ("PrometheusRule", "tq-tablequeue"),
        ("Service", "tq-tablequeue-api"),
        ("Service", "tq-tablequeue-operator"),
        ("ServiceAccount", "tq-tablequeue-operator"),
        ("ServiceMonitor", "tq-tablequeue-api"),
        ("ServiceMonitor", "tq-tablequeue-operator"),
    ]
    operator = objects["Deployment", "tq-tablequeue-operator"]["spec"]["template"]["spec"]
    container = operator["containers"][0]
    assert operator["serviceAccountName"] == "tq-tablequeue-operator"
    assert container["image"] == "tablequeue/operator:0.1.0"
    assert "--worker-image=tablequeue/worker:0.1.0" in container["args"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    dashboard = objects["ConfigMap", "tq-tablequeue-dashboard"]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["tablequeue.json"])["uid"] == "tablequeue-overview"
    adapter = objects["ConfigMap", "tq-tablequeue-adapter-rules"]["data"]["config.yaml"]
    assert yaml.safe_load(adapter) == yaml.safe_load(
        (CHART / "files/adapter-rules.yaml").read_text()
    )
    rule = objects["PrometheusRule", "tq-tablequeue"]["spec"]
    assert rule == yaml.safe_load((CHART / "files" / "alerts.yaml").read_text())


def test_chart_crd_is_the_generated_one(deploy_tools: DeployTools, tmp_path: Path) -> None:
    """crds/queue.yaml (generated from tablequeue/spec.py) is the one source: the chart's
    crds/queue.yaml links to it, and `helm package` puts its contents into the chart archive."""
    linked = CHART / "crds" / "queue.yaml"
    assert linked.is_symlink()
    assert linked.resolve() == (REPO / "crds" / "queue.yaml").resolve()
    run([deploy_tools.helm, "package", CHART, "-d", tmp_path], tool_env(deploy_tools, tmp_path))
    with tarfile.open(tmp_path / "tablequeue-0.1.0.tgz") as archive:
        member = archive.extractfile("tablequeue/crds/queue.yaml")
        assert member is not None
        assert member.read() == (REPO / "crds" / "queue.yaml").read_bytes()


def test_chart_rbac_is_operator_rbac(deploy_tools: DeployTools, tmp_path: Path) -> None:
    """The chart's ClusterRole grants exactly operator/rbac.yaml's rules (the operator tests run
    with that file; tests/deploy/test_chart_cluster.py runs them with the chart's own account)."""
    role = by_kind(template(deploy_tools, tmp_path))["ClusterRole", "tq-tablequeue-operator"]
    expected = yaml.safe_load((REPO / "operator" / "rbac.yaml").read_text())
    assert role["rules"] == expected["rules"]


def test_chart_dashboard_is_the_generated_one(deploy_tools: DeployTools) -> None:
    """files/dashboards/tablequeue.json is deploy/dashboard.py's output:
    `.venv/bin/python deploy/dashboard.py > charts/tablequeue/files/dashboards/tablequeue.json`."""
    from deploy.dashboard import dashboard_json

    shipped = (CHART / "files" / "dashboards" / "tablequeue.json").read_text()
    assert shipped == dashboard_json()


def test_chart_dashboard_panels_fit_the_grid_without_overlapping() -> None:
    board = json.loads((CHART / "files" / "dashboards" / "tablequeue.json").read_text())
    cells: dict[tuple[int, int], str] = {}
    for panel in board["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[x, y]}"
                cells[x, y] = panel["title"]
        assert panel["targets"] and all(t["expr"] for t in panel["targets"]), panel["title"]
