"""The test control plane itself: a real apiserver (CRD validation, RBAC, versions) and, when
kube-controller-manager is built, real controllers (Deployments, garbage collection)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.kube import ControlPlane, KubectlError, pinned_versions
from tests.support.waiting import wait_until


@pytest.fixture
def controllers(kube: ControlPlane) -> None:
    if not kube.with_controller_manager:
        pytest.skip("kube-controller-manager is not built")


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.tablequeue.dev"},
    "spec": {
        "group": "example.tablequeue.dev",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {
                                        "type": "string",
                                        "enum": ["small", "medium", "large"],
                                    },
                                    "count": {"type": "integer", "minimum": 1},
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


def widget(name: str, namespace: str, **spec: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "example.tablequeue.dev/v1",
            "kind": "Widget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
    )


def test_kubectl_and_apiserver_report_the_pinned_version(kube: ControlPlane) -> None:
    k8s_version, _ = pinned_versions()
    versions = kube.kubectl_json("version")
    assert versions["serverVersion"]["gitVersion"] == k8s_version
    assert versions["clientVersion"]["gitVersion"] == k8s_version
    status, body = kube.get("/version")
    assert status == 200
    assert json.loads(body)["gitVersion"] == k8s_version


def test_crd_schema_rejects_a_value_outside_its_enum(kube: ControlPlane, namespace: str) -> None:
    kube.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    kube.kubectl("wait", "--for=condition=Established", "crd/widgets.example.tablequeue.dev")

    good = widget("good", namespace, size="small", count=2)
    # The first apply after the CRD is established may still miss the new kind in discovery.
    wait_until(lambda: kube.kubectl("apply", "-f", "-", input=good, check=False).returncode == 0)
    stored = kube.kubectl_json("get", "widget", "good", "-n", namespace)
    assert stored["spec"] == {"size": "small", "count": 2}

    bad = kube.kubectl("apply", "-f", "-", input=widget("bad", namespace, size="huge"), check=False)
    assert bad.returncode != 0
    assert 'The Widget "bad" is invalid' in bad.stderr
    assert 'spec.size: Unsupported value: "huge"' in bad.stderr
    assert 'supported values: "small", "medium", "large"' in bad.stderr
    with pytest.raises(KubectlError, match="NotFound"):
        kube.kubectl("get", "widget", "bad", "-n", namespace)


def items(kube: ControlPlane, kind: str, namespace: str) -> list[Any]:
    found: list[Any] = kube.kubectl_json("get", kind, "-n", namespace)["items"]
    return found


def exists(kube: ControlPlane, kind: str, name: str, namespace: str) -> bool:
    result = kube.kubectl("get", kind, name, "-n", namespace, check=False)
    if result.returncode != 0 and "NotFound" not in result.stderr:
        raise AssertionError(result.stderr)
    return result.returncode == 0


def test_deployment_controller_creates_a_replicaset_and_pods(
    kube: ControlPlane, namespace: str, controllers: None
) -> None:
    image = "registry.invalid/web:1"  # never pulled: there is no kubelet
    kube.kubectl("create", "deployment", "web", f"--image={image}", "--replicas=2", "-n", namespace)

    (replicaset,) = wait_until(lambda: items(kube, "replicasets", namespace))
    (owner,) = replicaset["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Deployment", "web", True)
    # The ReplicaSet controller makes the Pods (Pending for ever: no scheduler), and the
    # Deployment's status follows.
    wait_until(lambda: len(items(kube, "pods", namespace)) == 2)

    def counted_replicas() -> Any:
        deployment = kube.kubectl_json("get", "deployment/web", "-n", namespace)
        return deployment if deployment["status"].get("replicas") == 2 else None

    deployment = wait_until(counted_replicas)
    assert deployment["status"]["observedGeneration"] == deployment["metadata"]["generation"]


def test_garbage_collector_deletes_what_an_owner_owned(
    kube: ControlPlane, namespace: str, controllers: None
) -> None:
    kube.kubectl("create", "configmap", "owner", "-n", namespace)
    owner_uid = kube.kubectl_json("get", "configmap/owner", "-n", namespace)["metadata"]["uid"]
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner_uid}
    owned = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "owned", "namespace": namespace, "ownerReferences": [reference]},
        "data": {"key": "value"},
    }
    kube.kubectl("apply", "-f", "-", input=json.dumps(owned))
    assert exists(kube, "configmap", "owned", namespace)

    kube.kubectl("delete", "configmap", "owner", "-n", namespace)
    wait_until(lambda: not exists(kube, "configmap", "owned", namespace))


def test_queue_crd_keeps_a_null_app_readiness_path(kube: ControlPlane, namespace: str) -> None:
    """`appReadinessPath: null` turns the worker's app check off: the API server must keep the
    null (the field is `nullable`), not replace it by the default `/` as it does when absent.
    Server-side apply sends the null; a client-side `kubectl apply` drops null fields before
    sending (the guide says so)."""
    from tests.support.kube.fixtures import queue

    for name, workers in (("checked", {}), ("unchecked", {"appReadinessPath": None})):
        manifest = json.dumps(queue(name, namespace, workers=workers))
        kube.kubectl("apply", "--server-side", "-f", "-", input=manifest)
    checked = kube.kubectl_json("get", "queue", "checked", "-n", namespace)
    unchecked = kube.kubectl_json("get", "queue", "unchecked", "-n", namespace)
    assert checked["spec"]["workers"]["appReadinessPath"] == "/"
    assert unchecked["spec"]["workers"]["appReadinessPath"] is None
