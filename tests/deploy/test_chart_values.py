"""The chart's optional objects and pod settings, each rendered off (the default) and on:
PodDisruptionBudgets, NetworkPolicies, the API's Ingress and ServiceAccount, topology spread,
extra volumes, mounts and environment. test_chart.py checks with kubeconform that all of them
together (ci/everything-on-values.yaml) are valid objects."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.deploy_tools import CHART, DeployTools

from .helm import REQUIRED_VALUES, by_kind, template, tool_env

OPTIONAL_KINDS = {"PodDisruptionBudget", "NetworkPolicy", "Ingress"}


def rendered(tools: DeployTools, home: Path, *values: str) -> dict[tuple[str, str], Any]:
    return by_kind(template(tools, home, *values))


def pod(objects: dict[tuple[str, str], Any], component: str) -> Any:
    """The pod spec of a component's Deployment."""
    return objects["Deployment", f"tq-tablequeue-{component}"]["spec"]["template"]["spec"]


def selector(component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": f"tablequeue-{component}", "app.kubernetes.io/instance": "tq"}


def test_chart_optional_objects_and_pod_settings_are_off_by_default(
    deploy_tools: DeployTools, tmp_path: Path
) -> None:
    objects = rendered(deploy_tools, tmp_path)
    assert {kind for kind, _ in objects} & OPTIONAL_KINDS == set()
    for component in ("operator", "api"):
        spec = pod(objects, component)
        assert "topologySpreadConstraints" not in spec
        assert "volumes" not in spec
        assert "volumeMounts" not in spec["containers"][0]


def test_chart_pod_disruption_budgets(deploy_tools: DeployTools, tmp_path: Path) -> None:
    objects = rendered(
        deploy_tools, tmp_path,
        "--set", "operator.podDisruptionBudget.enabled=true",
        "--set", "api.podDisruptionBudget.enabled=true",
        "--set", "api.podDisruptionBudget.minAvailable=50%",
    )  # fmt: skip
    operator = objects["PodDisruptionBudget", "tq-tablequeue-operator"]["spec"]
    assert operator == {"maxUnavailable": 1, "selector": {"matchLabels": selector("operator")}}
    api = objects["PodDisruptionBudget", "tq-tablequeue-api"]["spec"]
    assert api == {"minAvailable": "50%", "selector": {"matchLabels": selector("api")}}
    # A disabled component has no budget.
    without_api = rendered(
        deploy_tools, tmp_path,
        "--set", "api.enabled=false", "--set", "api.podDisruptionBudget.enabled=true",
    )  # fmt: skip
    assert ("PodDisruptionBudget", "tq-tablequeue-api") not in without_api


def test_chart_network_policies(deploy_tools: DeployTools, tmp_path: Path) -> None:
    monitoring = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "mon"}}}
    objects = rendered(
        deploy_tools, tmp_path,
        "--set", "networkPolicy.enabled=true",
        "--set-json", f"networkPolicy.operator.from=[{json.dumps(monitoring)}]",
    )  # fmt: skip
    operator = objects["NetworkPolicy", "tq-tablequeue-operator"]["spec"]
    assert operator == {
        "podSelector": {"matchLabels": selector("operator")},
        "policyTypes": ["Ingress"],
        "ingress": [{"ports": [{"port": "metrics"}, {"port": "liveness"}], "from": [monitoring]}],
    }
    api = objects["NetworkPolicy", "tq-tablequeue-api"]["spec"]
    assert api["podSelector"] == {"matchLabels": selector("api")}
    assert api["ingress"] == [{"ports": [{"port": "http"}]}]  # no `from`: any source
    # The named ports are the containers'.
    for component, ports in (("operator", {"metrics", "liveness"}), ("api", {"http"})):
        declared = {p["name"] for p in pod(objects, component)["containers"][0]["ports"]}
        assert ports <= declared
    without_api = rendered(
        deploy_tools, tmp_path, "--set", "networkPolicy.enabled=true", "--set", "api.enabled=false"
    )
    assert {name for kind, name in without_api if kind == "NetworkPolicy"} == {
        "tq-tablequeue-operator"
    }


def test_chart_api_ingress(deploy_tools: DeployTools, tmp_path: Path) -> None:
    backend = {"service": {"name": "tq-tablequeue-api", "port": {"name": "http"}}}
    objects = rendered(
        deploy_tools, tmp_path,
        "--set", "api.ingress.enabled=true",
        "--set", "api.ingress.className=nginx",
        "--set", "api.ingress.hosts={queues.example.com,tq.example.com}",
        "--set", "api.ingress.tls[0].secretName=tq-tls",
        "--set", "api.ingress.tls[0].hosts={queues.example.com}",
    )  # fmt: skip
    spec = objects["Ingress", "tq-tablequeue-api"]["spec"]
    assert spec["ingressClassName"] == "nginx"
    assert spec["tls"] == [{"secretName": "tq-tls", "hosts": ["queues.example.com"]}]
    path = {"path": "/", "pathType": "Prefix", "backend": backend}
    assert spec["rules"] == [
        {"host": host, "http": {"paths": [path]}}
        for host in ("queues.example.com", "tq.example.com")
    ]
    any_host = rendered(deploy_tools, tmp_path, "--set", "api.ingress.enabled=true")
    assert any_host["Ingress", "tq-tablequeue-api"]["spec"] == {
        "rules": [{"http": {"paths": [path]}}]
    }


def test_chart_api_service_account(deploy_tools: DeployTools, tmp_path: Path) -> None:
    """The API runs as its own account, with no token mounted unless asked for."""
    objects = rendered(deploy_tools, tmp_path)
    account = objects["ServiceAccount", "tq-tablequeue-api"]
    assert account["automountServiceAccountToken"] is False
    spec = pod(objects, "api")
    assert spec["serviceAccountName"] == "tq-tablequeue-api"
    assert spec["automountServiceAccountToken"] is False

    mounted = rendered(deploy_tools, tmp_path, "--set", "api.serviceAccount.automountToken=true")
    assert mounted["ServiceAccount", "tq-tablequeue-api"]["automountServiceAccountToken"] is True
    assert pod(mounted, "api")["automountServiceAccountToken"] is True

    existing = rendered(
        deploy_tools, tmp_path,
        "--set", "api.serviceAccount.create=false", "--set", "api.serviceAccount.name=shared",
    )  # fmt: skip
    assert ("ServiceAccount", "tq-tablequeue-api") not in existing
    assert pod(existing, "api")["serviceAccountName"] == "shared"
    default = rendered(deploy_tools, tmp_path, "--set", "api.serviceAccount.create=false")
    assert pod(default, "api")["serviceAccountName"] == "default"


def test_chart_topology_spread_gets_the_component_selector(
    deploy_tools: DeployTools, tmp_path: Path
) -> None:
    """A constraint without a labelSelector spreads the component's own pods; one with a
    labelSelector keeps it."""
    zone = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway"}  # fmt: skip
    own = {**zone, "labelSelector": {"matchLabels": {"team": "queues"}}}
    objects = rendered(
        deploy_tools, tmp_path,
        "--set-json", f"operator.topologySpreadConstraints=[{json.dumps(zone)}]",
        "--set-json", f"api.topologySpreadConstraints=[{json.dumps(zone)},{json.dumps(own)}]",
    )  # fmt: skip
    assert pod(objects, "operator")["topologySpreadConstraints"] == [
        {**zone, "labelSelector": {"matchLabels": selector("operator")}}
    ]
    assert pod(objects, "api")["topologySpreadConstraints"] == [
        {**zone, "labelSelector": {"matchLabels": selector("api")}},
        own,
    ]


def test_chart_extra_volumes_mounts_and_env(deploy_tools: DeployTools, tmp_path: Path) -> None:
    """E.g. the databases' CA certificate from a Secret, named by libpq's PGSSLROOTCERT."""
    volume = {"name": "db-ca", "secret": {"secretName": "db-ca"}}
    mount = {"name": "db-ca", "mountPath": "/etc/tablequeue/db-ca", "readOnly": True}
    env = {"name": "PGSSLROOTCERT", "value": "/etc/tablequeue/db-ca/ca.crt"}
    values: list[str] = []
    for component in ("operator", "api"):
        values += [
            "--set-json", f"{component}.extraVolumes=[{json.dumps(volume)}]",
            "--set-json", f"{component}.extraVolumeMounts=[{json.dumps(mount)}]",
            "--set-json", f"{component}.extraEnv=[{json.dumps(env)}]",
        ]  # fmt: skip
    objects = rendered(deploy_tools, tmp_path, *values)
    for component in ("operator", "api"):
        spec = pod(objects, component)
        assert spec["volumes"] == [volume]
        container = spec["containers"][0]
        assert container["volumeMounts"] == [mount]
        assert container["env"][-1] == env


@pytest.mark.parametrize(
    ("wrong", "name"),
    [
        ("operator.intervall=5", "intervall"),
        ("api.ingress.host=queues.example.com", "host"),
        ("api.podDisruptionBudget.maxUnavailable=half", "maxUnavailable"),
        ("networkPolicy.enable=true", "enable"),
        ("crds.create=true", "create"),
        ("api.ingress.pathType=Anything", "pathType"),
    ],
)
def test_chart_values_schema_refuses_typos_and_wrong_types(
    deploy_tools: DeployTools, tmp_path: Path, wrong: str, name: str
) -> None:
    """A misspelt key or a wrong type is refused before rendering, naming the key."""
    result = subprocess.run(
        [str(deploy_tools.helm), "template", "tq", str(CHART), *REQUIRED_VALUES, "--set", wrong],
        capture_output=True,
        text=True,
        env=tool_env(deploy_tools, tmp_path),
        check=False,
    )
    assert result.returncode != 0, wrong
    assert name in result.stderr, result.stderr


def test_chart_api_serves_several_databases(deploy_tools: DeployTools, tmp_path: Path) -> None:
    """Each of api.databases: a variable from its Secret, and its NAME=$(variable) in
    TABLEQUEUE_API_DATABASES, which Kubernetes expands from the variables before it."""
    databases = [
        {"name": "billing", "secretRef": {"name": "billing-db"}},
        {"name": "eu-archive", "secretRef": {"name": "archive", "key": "dsn"}},
    ]
    listed = f"api.databases={json.dumps(databases)}"
    objects = rendered(deploy_tools, tmp_path, "--set-json", listed)
    env = pod(objects, "api")["containers"][0]["env"]
    names = [variable["name"] for variable in env]
    assert names[:4] == [
        "TABLEQUEUE_DB",
        "TABLEQUEUE_DB_BILLING",
        "TABLEQUEUE_DB_EU_ARCHIVE",
        "TABLEQUEUE_API_DATABASES",
    ]
    assert env[1]["valueFrom"] == {"secretKeyRef": {"name": "billing-db", "key": "url"}}
    assert env[2]["valueFrom"] == {"secretKeyRef": {"name": "archive", "key": "dsn"}}
    assert env[3]["value"] == (
        "billing=$(TABLEQUEUE_DB_BILLING) eu-archive=$(TABLEQUEUE_DB_EU_ARCHIVE)"
    )
    single = pod(rendered(deploy_tools, tmp_path), "api")["containers"][0]["env"]
    assert "TABLEQUEUE_API_DATABASES" not in {variable["name"] for variable in single}


@pytest.mark.parametrize(
    ("databases", "problem"),
    [
        ([{"name": "Billing", "secretRef": {"name": "s"}}], "does not match pattern"),
        ([{"name": "billing"}], "missing property 'secretRef'"),
        ([{"name": "default", "secretRef": {"name": "s"}}], "the name default is api.database's"),
        (
            [{"name": "b", "secretRef": {"name": "s"}}, {"name": "b", "secretRef": {"name": "t"}}],
            "the name b is given twice",
        ),
    ],
)
def test_chart_refuses_bad_api_databases(
    deploy_tools: DeployTools, tmp_path: Path, databases: list[Any], problem: str
) -> None:
    listed = f"api.databases={json.dumps(databases)}"
    result = subprocess.run(
        [
            str(deploy_tools.helm),
            "template",
            "tq",
            str(CHART),
            *REQUIRED_VALUES,
            "--set-json",
            listed,
        ],
        capture_output=True,
        text=True,
        env=tool_env(deploy_tools, tmp_path),
        check=False,
    )
    assert result.returncode != 0
    assert problem in result.stderr
