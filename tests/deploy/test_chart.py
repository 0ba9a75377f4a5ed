"""charts/tablequeue without a cluster: helm lint, ct lint, kubeconform on what it renders (strict,
with the real schemas of Kubernetes and of the CRDs), and the files it must keep equal to their
single source (the CRD, the operator's RBAC, the dashboard). The optional objects and pod
settings: tests/deploy/test_chart_values.py."""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.support.deploy_tools import CHART, REPO, DeployTools

from .helm import PROMETHEUS_OPERATOR, REQUIRED_VALUES, by_kind, documents, run, template, tool_env

EVERYTHING_ON = CHART / "ci" / "everything-on-values.yaml"
"""Every optional object and pod setting on (ct lints with it too)."""

VARIANTS = {
    "defaults": PROMETHEUS_OPERATOR,
    "defaults-without-prometheus-operator": [],
    "everything-on": [*PROMETHEUS_OPERATOR, "--values", str(EVERYTHING_ON)],
    "everything-off": [
        "--set",
        "crds.install=false",
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
        *PROMETHEUS_OPERATOR,
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
    rendered = template(deploy_tools, tmp_path, *VARIANTS[variant])
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


MONITORS = [
    ("PodMonitor", "tq-tablequeue-workers"),
    ("PrometheusRule", "tq-tablequeue"),
    ("ServiceMonitor", "tq-tablequeue-api"),
    ("ServiceMonitor", "tq-tablequeue-operator"),
]
"""prometheus-operator's objects of the defaults."""


def test_chart_objects(deploy_tools: DeployTools, tmp_path: Path) -> None:
    objects = by_kind(template(deploy_tools, tmp_path, *PROMETHEUS_OPERATOR))
    assert sorted(objects) == sorted([
        ("ClusterRole", "tq-tablequeue-operator"),
        ("ClusterRoleBinding", "tq-tablequeue-operator"),
        ("ConfigMap", "tq-tablequeue-adapter-rules"),
        ("ConfigMap", "tq-tablequeue-dashboard"),
        ("CustomResourceDefinition", "queues.tablequeue.dev"),
        ("Deployment", "tq-tablequeue-api"),
        ("Deployment", "tq-tablequeue-operator"),
        ("Service", "tq-tablequeue-api"),
        ("Service", "tq-tablequeue-operator"),
        ("ServiceAccount", "tq-tablequeue-api"),
        ("ServiceAccount", "tq-tablequeue-operator"),
        *MONITORS,
    ])  # fmt: skip
    operator = objects["Deployment", "tq-tablequeue-operator"]["spec"]["template"]["spec"]
    container = operator["containers"][0]
    assert operator["serviceAccountName"] == "tq-tablequeue-operator"
    assert container["image"] == "tablequeue/operator:0.1.0"
    assert "--worker-image=tablequeue/worker:0.1.0" in container["args"]
    assert "--archive-image=tablequeue/pipeline:0.1.0" in container["args"]
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


def test_chart_makes_monitors_only_where_prometheus_operator_is(
    deploy_tools: DeployTools, tmp_path: Path
) -> None:
    """Without monitoring.coreos.com/v1 among the cluster's APIs the monitors are left out (an
    install would fail on them) and nothing else changes; with it they are there, unless
    switched off."""
    without = by_kind(template(deploy_tools, tmp_path))
    with_crds = by_kind(template(deploy_tools, tmp_path, *PROMETHEUS_OPERATOR))
    assert sorted(set(with_crds) - set(without)) == MONITORS
    assert all(without[key] == with_crds[key] for key in without)
    switched_off = by_kind(
        template(
            deploy_tools, tmp_path, *PROMETHEUS_OPERATOR,
            "--set", "monitoring.serviceMonitors.api=false",
            "--set", "monitoring.prometheusRule.enabled=false",
        )
    )  # fmt: skip
    assert sorted(set(with_crds) - set(switched_off)) == [
        ("PrometheusRule", "tq-tablequeue"),
        ("ServiceMonitor", "tq-tablequeue-api"),
    ]


COMPONENTS = {
    "operator": {
        ("ClusterRole", "tq-tablequeue-operator"),
        ("ClusterRoleBinding", "tq-tablequeue-operator"),
        ("CustomResourceDefinition", "queues.tablequeue.dev"),
        ("Deployment", "tq-tablequeue-operator"),
        ("NetworkPolicy", "tq-tablequeue-operator"),
        ("PodDisruptionBudget", "tq-tablequeue-operator"),
        ("Service", "tq-tablequeue-operator"),
        ("ServiceAccount", "tq-tablequeue-operator"),
    },
    "api": {
        ("Deployment", "tq-tablequeue-api"),
        ("Ingress", "tq-tablequeue-api"),
        ("NetworkPolicy", "tq-tablequeue-api"),
        ("PodDisruptionBudget", "tq-tablequeue-api"),
        ("Service", "tq-tablequeue-api"),
        ("ServiceAccount", "tq-tablequeue-api"),
    },
    "monitoring": {
        ("ConfigMap", "tq-tablequeue-adapter-rules"),
        ("ConfigMap", "tq-tablequeue-dashboard"),
        *MONITORS,
    },
}


def test_chart_labels_every_object_and_pod_with_its_component(
    deploy_tools: DeployTools, tmp_path: Path
) -> None:
    objects = by_kind(template(deploy_tools, tmp_path, *VARIANTS["everything-on"]))
    found: dict[str, set[tuple[str, str]]] = {}
    for key, manifest in objects.items():
        labels = manifest["metadata"]["labels"]
        assert labels["app.kubernetes.io/part-of"] == "tablequeue", key
        found.setdefault(labels["app.kubernetes.io/component"], set()).add(key)
    assert found == COMPONENTS
    for component in ("operator", "api"):
        deployment = objects["Deployment", f"tq-tablequeue-{component}"]
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert pod_labels["app.kubernetes.io/component"] == component
        # The selector stays as it was: a Deployment's selector cannot change in an upgrade.
        assert deployment["spec"]["selector"]["matchLabels"] == {
            "app.kubernetes.io/name": f"tablequeue-{component}",
            "app.kubernetes.io/instance": "tq",
        }


def test_chart_crd_is_the_generated_one(deploy_tools: DeployTools, tmp_path: Path) -> None:
    """crds/queue.yaml (generated from tablequeue/spec/) is the one source: the chart's
    files/crds/queue.yaml links to it, `helm package` puts its contents into the chart archive,
    and the chart renders it unchanged but for its labels and helm.sh/resource-policy: keep."""
    linked = CHART / "files" / "crds" / "queue.yaml"
    assert linked.is_symlink()
    assert linked.resolve() == (REPO / "crds" / "queue.yaml").resolve()
    assert not (CHART / "crds").exists()  # helm would install it once and never upgrade it
    run([deploy_tools.helm, "package", CHART, "-d", tmp_path], tool_env(deploy_tools, tmp_path))
    with tarfile.open(tmp_path / "tablequeue-0.1.0.tgz") as archive:
        member = archive.extractfile("tablequeue/files/crds/queue.yaml")
        assert member is not None
        assert member.read() == (REPO / "crds" / "queue.yaml").read_bytes()

    rendered = by_kind(template(deploy_tools, tmp_path))[
        "CustomResourceDefinition", "queues.tablequeue.dev"
    ]
    metadata = rendered.pop("metadata")
    assert metadata.pop("annotations") == {"helm.sh/resource-policy": "keep"}
    assert metadata.pop("labels")["app.kubernetes.io/component"] == "operator"
    generated = yaml.safe_load((REPO / "crds" / "queue.yaml").read_text())
    assert {**rendered, "metadata": metadata} == generated

    kinds = {
        kind for kind, _ in by_kind(template(deploy_tools, tmp_path, "--set", "crds.install=false"))
    }
    assert "CustomResourceDefinition" not in kinds


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
    assert shipped == dashboard_json(), "stale: run scripts/regenerate"


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


def test_chart_dashboard_charts_every_metric() -> None:
    """Every series of tablequeue/metrics.py has a panel (a deprecated name's new one stands
    for it): seven had none, the flow controls, pauses and purges among them."""
    import prometheus_client

    from deploy.dashboard import DEPRECATED_METRICS, PANELS
    from tablequeue import metrics

    ours = {
        family.name
        for collector in vars(metrics).values()
        if isinstance(collector, prometheus_client.metrics.MetricWrapperBase)
        for family in collector.describe()
    }
    charted = {
        re.sub(r"_(total|bucket|count|sum)$", "", name)
        for panel in PANELS
        for query in panel.queries
        for name in re.findall(r"\btablequeue_\w+", query.expr)
    }
    assert len(ours) > 15
    assert ours - DEPRECATED_METRICS.keys() - charted == set()
