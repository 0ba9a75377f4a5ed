"""charts/tablequeue in the real test control plane: helm install (every optional object on, the
CRD adopted as the README says), upgrade (reaching the CRD) and uninstall (the CRD stays); into a
bare cluster (the chart creates the CRD, and the monitors once prometheus-operator's CRDs are
there); and the operator's ServiceAccount as the chart makes it: allowed what the operator does,
refused what it must not, and enough to run a Queue's whole life with its token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tablequeue import NewMessage, connect
from tests.operator.conftest import replicas_of, table_names, wait
from tests.support.deploy_tools import CHART, DeployTools
from tests.support.kube import ControlPlane, control_plane
from tests.support.kube.fixtures import Operator, apply, get, queue, secret, wait_ready

from .helm import REQUIRED_VALUES, run, tool_env
from .test_chart import EVERYTHING_ON

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def monitoring_crds(kube: ControlPlane, deploy_tools: DeployTools) -> None:
    """prometheus-operator's ServiceMonitor, PodMonitor and PrometheusRule CRDs and KEDA's, for
    real (the chart's monitors need the first, the operator's KEDA rules name the second)."""
    for crd in [*deploy_tools.prometheus_operator_crds, *deploy_tools.keda_crds]:
        kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd))
    kube.kubectl(
        "wait",
        "--for=condition=Established",
        "crd/servicemonitors.monitoring.coreos.com",
        "crd/podmonitors.monitoring.coreos.com",
        "crd/prometheusrules.monitoring.coreos.com",
        "crd/scaledobjects.keda.sh",
        "crd/triggerauthentications.keda.sh",
        "--timeout=60s",
    )


@dataclass(frozen=True)
class Release:
    name: str
    namespace: str
    tools: DeployTools
    kube: ControlPlane
    home: Path

    @property
    def operator_account(self) -> str:
        return f"{self.name}-tablequeue-operator"

    def helm(self, *args: str) -> str:
        env = tool_env(self.tools, self.home, self.kube.kubeconfig)
        return run([self.tools.helm, *args, "--namespace", self.namespace], env)

    def install(self, *values: str) -> str:
        return self.helm("install", self.name, str(CHART), *REQUIRED_VALUES, *values)

    def names(self, kinds: str) -> set[tuple[str, str]]:
        found = self.kube.kubectl_json(
            "get", kinds, "-n", self.namespace, "-l", f"app.kubernetes.io/instance={self.name}"
        )
        return {(item["kind"], item["metadata"]["name"]) for item in found["items"]}


def make_release(kube: ControlPlane, tools: DeployTools, home: Path, name: str) -> Release:
    namespace = f"{name}-system"
    kube.kubectl("create", "namespace", namespace)
    return Release(name, namespace, tools, kube, home)


NAMESPACED_KINDS = (
    "deployments,services,serviceaccounts,configmaps,servicemonitors,podmonitors,prometheusrules,"
    "poddisruptionbudgets,networkpolicies,ingresses"
)
CRD = "queues.tablequeue.dev"


def adopt_crd(release: Release) -> None:
    """The README's step for a cluster whose CRD came from an older chart (its crds/ folder) or
    from `kubectl apply`, as the test control plane's did: hand it to the release."""
    kube = release.kube
    kube.kubectl("label", "crd", CRD, "app.kubernetes.io/managed-by=Helm", "--overwrite")
    kube.kubectl(
        "annotate", "crd", CRD, f"meta.helm.sh/release-name={release.name}",
        f"meta.helm.sh/release-namespace={release.namespace}", "--overwrite",
    )  # fmt: skip


def test_chart_installs_upgrades_and_uninstalls_keeping_the_crd(
    kube: ControlPlane, deploy_tools: DeployTools, monitoring_crds: None, tmp_path: Path
) -> None:
    release = make_release(kube, deploy_tools, tmp_path, "tq-install")
    adopt_crd(release)
    notes = release.install("--values", str(EVERYTHING_ON))
    assert "kubectl get tq" in notes and "port-forward svc/tq-install-tablequeue-api" in notes
    assert "ServiceMonitor/PodMonitor objects and a PrometheusRule were created" in notes
    full = "tq-install-tablequeue"
    assert release.names(NAMESPACED_KINDS) == {
        ("Deployment", f"{full}-operator"),
        ("Deployment", f"{full}-api"),
        ("Service", f"{full}-operator"),
        ("Service", f"{full}-api"),
        ("ServiceAccount", f"{full}-operator"),
        ("ServiceAccount", f"{full}-api"),
        ("ConfigMap", f"{full}-dashboard"),
        ("ConfigMap", f"{full}-adapter-rules"),
        ("ServiceMonitor", f"{full}-operator"),
        ("ServiceMonitor", f"{full}-api"),
        ("PodMonitor", f"{full}-workers"),
        ("PrometheusRule", full),
        ("PodDisruptionBudget", f"{full}-operator"),
        ("PodDisruptionBudget", f"{full}-api"),
        ("NetworkPolicy", f"{full}-operator"),
        ("NetworkPolicy", f"{full}-api"),
        ("Ingress", f"{full}-api"),
    }
    assert f"name: {CRD}" in release.helm("get", "manifest", "tq-install")
    assert get(kube, "clusterrole", f"{full}-operator", "") is not None
    binding = kube.kubectl_json("get", "clusterrolebinding", f"{full}-operator")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": f"{full}-operator", "namespace": release.namespace}
    ]

    release.helm(
        "upgrade", "tq-install", str(CHART), *REQUIRED_VALUES,
        "--set", "api.enabled=false", "--set", "operator.interval=2",
        "--set", "monitoring.podMonitor.workers=false", "--set", "commonLabels.tier=queues",
    )  # fmt: skip
    names = release.names(NAMESPACED_KINDS)
    assert {name for _, name in names if name.endswith("-api")} == set()
    assert ("PodMonitor", f"{full}-workers") not in names
    # The upgrade reached the CRD (a template of the chart, not a file of its crds/ folder).
    assert kube.kubectl_json("get", "crd", CRD)["metadata"]["labels"]["tier"] == "queues"
    operator = kube.kubectl_json("get", "deployment", f"{full}-operator", "-n", release.namespace)
    assert "--interval=2" in operator["spec"]["template"]["spec"]["containers"][0]["args"]
    history = json.loads(release.helm("history", "tq-install", "-o", "json"))
    assert [(h["revision"], h["status"]) for h in history] == [(1, "superseded"), (2, "deployed")]

    uninstalled = release.helm("uninstall", "tq-install", "--wait")
    assert release.names(NAMESPACED_KINDS) == set()
    assert get(kube, "clusterrole", f"{full}-operator", "") is None
    # The CRD (helm.sh/resource-policy: keep) stays, and with it every Queue and its table.
    assert f"kept due to the resource policy:\n[CustomResourceDefinition] {CRD}" in uninstalled
    assert kube.kubectl("get", "crd", CRD, check=False).returncode == 0


def test_chart_installs_into_a_bare_cluster_and_adds_the_monitors_with_their_crds(
    deploy_tools: DeployTools, tmp_path: Path
) -> None:
    """A cluster without the Queue CRD and without prometheus-operator: the install creates the
    CRD and leaves the monitors out (it used to fail on them); once prometheus-operator's CRDs
    are installed, `helm upgrade` adds them."""
    with control_plane(controller_manager=False) as bare:
        release = make_release(bare, deploy_tools, tmp_path, "tq-bare")
        notes = release.install()
        assert "the cluster does not serve\nmonitoring.coreos.com/v1" in notes
        bare.kubectl("wait", "--for=condition=Established", f"crd/{CRD}", "--timeout=60s")
        crd = bare.kubectl_json("get", "crd", CRD)["metadata"]
        assert crd["annotations"]["helm.sh/resource-policy"] == "keep"
        assert crd["annotations"]["meta.helm.sh/release-name"] == "tq-bare"
        monitors = "servicemonitors,podmonitors,prometheusrules"
        assert bare.kubectl("get", monitors, "-A", check=False).returncode != 0  # no such kinds

        for file in deploy_tools.prometheus_operator_crds:
            bare.kubectl("apply", "--server-side", "-f", str(file))
        for kind in monitors.split(","):
            bare.kubectl(
                "wait", "--for=condition=Established", f"crd/{kind}.monitoring.coreos.com",
                "--timeout=60s",
            )  # fmt: skip
        release.helm("upgrade", "tq-bare", str(CHART), *REQUIRED_VALUES)
        assert release.names(monitors) == {
            ("ServiceMonitor", "tq-bare-tablequeue-operator"),
            ("ServiceMonitor", "tq-bare-tablequeue-api"),
            ("PodMonitor", "tq-bare-tablequeue-workers"),
            ("PrometheusRule", "tq-bare-tablequeue"),
        }


@pytest.fixture(scope="module")
def rbac_release(
    kube: ControlPlane,
    deploy_tools: DeployTools,
    monitoring_crds: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Release]:
    release = make_release(kube, deploy_tools, tmp_path_factory.mktemp("helm"), "tq-rbac")
    # The CRD is another release's (or nobody's): one release per cluster owns it.
    release.install("--set", "api.enabled=false", "--set", "crds.install=false")
    yield release
    release.helm("uninstall", "tq-rbac")


ALLOWED = [
    "get,list,watch,patch,update queues.tablequeue.dev",
    "get,patch,update queues.tablequeue.dev --subresource=status",
    "update queues.tablequeue.dev --subresource=finalizers",
    "get secrets",
    "get,list,watch,create,update,patch,delete deployments.apps",
    "get,patch,update deployments.apps --subresource=scale",
    "get,list,watch,create,update,patch,delete horizontalpodautoscalers.autoscaling",
    "list,patch pods",
    "get,create,update,delete scaledobjects.keda.sh",
    "get,create,update,delete triggerauthentications.keda.sh",
    "get,create,update,delete cronjobs.batch",
    "create,patch events",
    "create,patch events.events.k8s.io",
    "get,list,watch customresourcedefinitions.apiextensions.k8s.io",
    "get,list,watch namespaces",
]
REFUSED = [
    "list,watch,create,update,patch,delete secrets",  # only the Secret a Queue names, by name
    "create,delete queues.tablequeue.dev",
    "get,create configmaps",
    "get,watch,create,update,delete pods",
    "create pods --subresource=exec",
    "create,update,delete customresourcedefinitions.apiextensions.k8s.io",
    "create,update clusterroles.rbac.authorization.k8s.io",
    "create rolebindings.rbac.authorization.k8s.io",
    "list,watch scaledobjects.keda.sh",
    "list,watch,patch cronjobs.batch",
    "create jobs.batch",
    "create serviceaccounts --subresource=token",
    "impersonate users",
    "get nodes",
]


def can_i(release: Release, rule: str) -> dict[str, bool]:
    """`kubectl auth can-i` as the chart's ServiceAccount, for each verb of a rule."""
    verbs, resource, *rest = rule.split()
    account = f"system:serviceaccount:{release.namespace}:{release.operator_account}"
    answers = {}
    for verb in verbs.split(","):
        result = release.kube.kubectl(
            "auth", "can-i", verb, resource, *rest, f"--as={account}", "-n", "some-namespace",
            check=False,
        )  # fmt: skip
        assert result.stdout.strip() in ("yes", "no"), result.stderr
        answers[f"{verb} {resource} {' '.join(rest)}".strip()] = result.stdout.strip() == "yes"
    return answers


def test_chart_operator_account_is_allowed_what_it_needs_and_refused_the_rest(
    rbac_release: Release,
) -> None:
    allowed = {k: v for rule in ALLOWED for k, v in can_i(rbac_release, rule).items()}
    refused = {k: v for rule in REFUSED for k, v in can_i(rbac_release, rule).items()}
    assert [k for k, v in allowed.items() if not v] == []
    assert [k for k, v in refused.items() if v] == []


def account_kubeconfig(release: Release, path: Path) -> Path:
    """A kubeconfig with a token of the chart's ServiceAccount (as the operator's pod has)."""
    token = release.kube.kubectl(
        "create", "token", release.operator_account, "-n", release.namespace, "--duration=1h"
    ).stdout.strip()
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "test",
                "cluster": {
                    "server": release.kube.server,
                    "certificate-authority": str(release.kube.pki / "ca.crt"),
                },
            }
        ],
        "users": [{"name": "operator", "user": {"token": token}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "operator"}}],
        "current-context": "test",
    }
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


def test_chart_operator_account_runs_a_queue_from_creation_to_deletion(
    rbac_release: Release, kube: ControlPlane, namespace: str, postgres_url: str, tmp_path: Path
) -> None:
    """The operator's scenario with nothing but the chart's RBAC: table, Deployment, status,
    Events, scaling, HPA mode, finalizer and table drop; never a 403."""
    kubeconfig = account_kubeconfig(rbac_release, tmp_path / "kubeconfig")
    operator = Operator(kubeconfig, namespace, tmp_path / "operator.log")
    operator.start()
    try:
        apply(kube, secret("db", namespace, postgres_url))
        autoscaling = {"maxReplicas": 3, "messagesPerReplica": 2, "cooldownSeconds": 1}
        apply(
            kube,
            queue("charted", namespace, "db", deletionPolicy="Delete",
                  workers={"autoscaling": autoscaling}),
        )  # fmt: skip
        wait_ready(kube, "charted", namespace)
        assert "charted" in table_names(postgres_url)
        with connect(postgres_url) as db:
            db.queue("charted").enqueue_many([NewMessage(message={"n": n}) for n in range(5)])
        wait(lambda: replicas_of(kube, "charted", namespace) == 3)

        kube.kubectl(
            "patch", "queue", "charted", "-n", namespace, "--type=merge", "-p",
            json.dumps({"spec": {"workers": {"autoscaling": {"mode": "HPA"}}}}),
        )  # fmt: skip
        wait(lambda: get(kube, "hpa", "charted-workers", namespace))

        kube.kubectl("delete", "queue", "charted", "-n", namespace, "--wait=false")
        try:
            wait(lambda: get(kube, "queue", "charted", namespace) is None, timeout=60)
        except AssertionError:
            left = get(kube, "queue", "charted", namespace)
            raise AssertionError(f"not deleted: {left}\n{operator.log()[-4000:]}") from None
        assert "charted" not in table_names(postgres_url)
    finally:
        operator.stop()
    # A refusal reads "Forbidden" (the Status reason) or "... is forbidden: User ..."; a bare
    # "403" would also match ports and millisecond timestamps in the log.
    log = operator.log()
    assert "forbidden" not in log.lower(), log[-6000:]
