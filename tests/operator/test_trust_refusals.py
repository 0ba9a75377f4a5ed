"""Issue 29 on a real API server: whatever the API server refuses (a worker Deployment, a scale,
a Secret it will not read) is Ready=False with its message and a Warning, and a refused Queue is
still deleted; SQLite URLs and more replicas than the operator's maximum are refused too. Last,
the red team's own: the operator under an admission policy that refuses its writes."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tablequeue import connect
from tests.operator.conftest import (
    messages,
    patch,
    replicas_of,
    status_of,
    table_names,
    ticks,
    wait,
    warnings,
)
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import (
    Operator,
    apply,
    condition_is,
    conditions,
    get,
    queue,
    secret,
    wait_ready,
)

pytestmark = pytest.mark.timeout(600)

REFUSED_TEMPLATE = {"spec": {"containers": [{"name": "Not A Name", "image": "app"}]}}
"""A pod template the CRD keeps (it is the user's) and the API server refuses (422)."""


def warned(kube: ControlPlane, namespace: str, name: str, reason: str) -> bool:
    return any(event["reason"] == reason for event in warnings(kube, namespace, name))


def never_ready(
    kube: ControlPlane, operator: Operator, name: str, namespace: str, count: int = 3
) -> None:
    """Ready is never True at any poll while the timer observes the Queue `count` more times."""
    start = ticks(operator, name)
    seen: list[dict[str, Any]] = []

    def observed() -> bool:
        seen.append(status_of(kube, name, namespace))
        return ticks(operator, name) >= start + count

    wait(observed, timeout=count * 5 + 10)
    for status in seen:
        assert conditions({"status": status})["Ready"]["status"] == "False", status


def delete(kube: ControlPlane, namespace: str, *names: str) -> None:
    """Delete Queues; kubectl waits until their finalizers are released."""
    kube.kubectl("delete", "queue", *names, "-n", namespace, "--timeout=60s")
    for name in names:
        assert get(kube, "queue", name, namespace) is None


# --- the defects ----------------------------------------------------------------------------------


def test_a_deployment_the_api_server_refuses_is_ready_false_with_its_message(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("refused", namespace, workers={"template": REFUSED_TEMPLATE}),
    )
    found = wait(condition_is(kube, "refused", namespace, "Ready", "False", "WorkersRefused"))
    message = conditions(found)["Ready"]["message"]
    assert message.startswith("the API server refused a worker object: "), message
    assert 'spec.template.spec.containers[0].name: Invalid value: "Not A Name"' in message, message
    assert conditions(found)["WorkersReady"]["reason"] == "WorkersRefused"
    wait(lambda: warned(kube, namespace, "refused", "WorkersRefused"))
    never_ready(kube, operator, "refused", namespace)
    assert get(kube, "deployment", "refused-workers", namespace) is None

    # A body the Kubernetes client refuses before it sends it: the same condition.
    patch(kube, "refused", namespace, {"workers": {"template": {"spec": {"nodeSelector": "x"}}}})

    def client_refused() -> str | None:
        ready = conditions({"status": status_of(kube, "refused", namespace)})["Ready"]
        return ready["message"] if "nodeSelector" in ready["message"] else None

    message = wait(client_refused)
    assert message == (
        "a worker object is invalid: spec.template.spec.nodeSelector: "
        "Input should be a valid dictionary"
    ), message

    patch(kube, "refused", namespace, {"workers": {"template": None}})  # null: removed
    wait_ready(kube, "refused", namespace, timeout=60)
    assert get(kube, "deployment", "refused-workers", namespace) is not None
    delete(kube, namespace, "refused")


def test_a_secret_reference_the_api_server_refuses_is_ready_false_and_deletable(
    kube: ControlPlane, namespace: str, operator: Operator
) -> None:
    # The schema takes any name; the API server refuses to look up one with a "%" (400).
    apply(kube, queue("unreadable", namespace, "50%off", deletionPolicy="Delete"))
    found = wait(
        condition_is(kube, "unreadable", namespace, "DatabaseReachable", "False", "SecretRefused")
    )
    message = conditions(found)["Ready"]["message"]
    assert message.startswith("the API server refused to read secret '50%off': "), message
    wait(lambda: warned(kube, namespace, "unreadable", "SecretRefused"))
    delete(kube, namespace, "unreadable")
    assert warned(kube, namespace, "unreadable", "TableKept")


def test_a_sqlite_url_is_refused_unless_the_operator_allows_it(
    kube: ControlPlane, namespace: str, operator: Operator, tmp_path: Path
) -> None:
    path = tmp_path / "tenant" / "chosen.db"
    path.parent.mkdir()
    apply(
        kube,
        secret("db", namespace, f"sqlite:///{path}"),
        queue("local", namespace, deletionPolicy="Delete"),
    )
    found = wait(condition_is(kube, "local", namespace, "Ready", "False", "SQLiteNotAllowed"))
    message = conditions(found)["Ready"]["message"]
    assert "names a SQLite database" in message and "--allow-sqlite" in message, message
    wait(lambda: warned(kube, namespace, "local", "SQLiteNotAllowed"))
    never_ready(kube, operator, "local", namespace)
    assert list(path.parent.iterdir()) == []  # no file made
    assert get(kube, "deployment", "local-workers", namespace) is None

    operator.stop()
    operator.env["TABLEQUEUE_OPERATOR_ALLOW_SQLITE"] = "true"
    operator.start()
    wait_ready(kube, "local", namespace, timeout=60)
    assert path.exists()
    delete(kube, namespace, "local")
    with connect(f"sqlite:///{path}") as db:
        assert db.queues() == []  # deletionPolicy Delete dropped it


def test_more_replicas_than_the_operators_maximum_are_refused(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("wide", namespace, workers={"autoscaling": {"minReplicas": 1, "maxReplicas": 500}}),
    )
    found = wait(condition_is(kube, "wide", namespace, "Ready", "False", "TooManyReplicas"))
    message = conditions(found)["Ready"]["message"]
    assert message == (
        "spec.workers.autoscaling.maxReplicas: 500 is more than this operator's maximum of 100 "
        "(--max-replicas, TABLEQUEUE_OPERATOR_MAX_REPLICAS)"
    ), message
    wait(lambda: warned(kube, namespace, "wide", "TooManyReplicas"))
    never_ready(kube, operator, "wide", namespace)
    assert get(kube, "deployment", "wide-workers", namespace) is None

    operator.stop()
    operator.env["TABLEQUEUE_OPERATOR_MAX_REPLICAS"] = "500"
    operator.start()
    wait_ready(kube, "wide", namespace, timeout=60)
    assert replicas_of(kube, "wide", namespace) == 1


# --- the red team: the operator under API-server refusals -----------------------------------------


@pytest.fixture
def refusing(kube: ControlPlane, namespace: str) -> Iterator[Callable[[bool], None]]:
    """`refusing(True)` makes the API server refuse every create and update of Deployments,
    their scale and HPAs in the test's namespace (a ValidatingAdmissionPolicy, as a cluster's
    own policy would); `refusing(False)` lifts it. Each returns once the API server does so."""
    name = f"refuse-{namespace}"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["apps", "autoscaling"],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": [
                            "deployments",
                            "deployments/scale",
                            "horizontalpodautoscalers",
                        ],
                    }
                ]
            },
            "validations": [{"expression": "false", "message": "refused by the red team"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            },
        },
    }
    probe = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "probe", "namespace": namespace},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"probe": "yes"}},
            "template": {
                "metadata": {"labels": {"probe": "yes"}},
                "spec": {"containers": [{"name": "probe", "image": "probe"}]},
            },
        },
    }

    def refused() -> bool:
        result = apply(kube, probe, check=False)
        kube.kubectl("delete", "deployment", "probe", "-n", namespace, "--ignore-not-found")
        return result.returncode != 0 and "refused by the red team" in result.stderr

    def switch(on: bool) -> None:
        if on:
            apply(kube, policy, binding)
        else:
            kube.kubectl("delete", "validatingadmissionpolicybinding", name, "--ignore-not-found")
        wait(lambda: refused() == on)

    try:
        yield switch
    finally:
        kube.kubectl("delete", "validatingadmissionpolicybinding", name, "--ignore-not-found")
        kube.kubectl("delete", "validatingadmissionpolicy", name, "--ignore-not-found")


def test_under_api_server_refusals_every_condition_and_finalizer_is_right(
    kube: ControlPlane,
    namespace: str,
    operator: Operator,
    postgres_url: str,
    refusing: Callable[[bool], None],
) -> None:
    scaled = {"autoscaling": {"minReplicas": 0, "maxReplicas": 3, "messagesPerReplica": 10}}
    apply(kube, secret("db", namespace, postgres_url), queue("running", namespace, workers=scaled))
    wait_ready(kube, "running", namespace)
    refusing(True)

    # New Queues in every scaling mode: no Deployment, Ready=False with the API server's word.
    modes = {"plain": "Operator", "hpa": "HPA", "fixed": "None"}
    apply(
        kube,
        *(
            queue(name, namespace, workers={"autoscaling": {"mode": mode}}, deletionPolicy="Delete")
            for name, mode in modes.items()
        ),
    )
    for name in modes:
        found = wait(condition_is(kube, name, namespace, "Ready", "False", "WorkersRefused"))
        assert "refused by the red team" in conditions(found)["Ready"]["message"]
        assert conditions(found)["TableReady"]["status"] == "True"
        wait(functools.partial(warned, kube, namespace, name, "WorkersRefused"))
        assert get(kube, "deployment", f"{name}-workers", namespace) is None
    never_ready(kube, operator, "plain", namespace)

    # A running Queue whose scale is refused: ScaleRefused, and its counts still reported.
    with connect(postgres_url) as db:
        db.queue("running").enqueue_many(messages(25))
    found = wait(condition_is(kube, "running", namespace, "Ready", "False", "ScaleRefused"))
    assert "refused by the red team" in conditions(found)["WorkersReady"]["message"]
    assert found["status"]["counts"] == {"Pending": 25}
    assert replicas_of(kube, "running", namespace) == 0
    wait(lambda: warned(kube, namespace, "running", "ScaleRefused"))

    # A change of its spec is refused too (the Deployment's update), and says so.
    patch(kube, "running", namespace, {"workers": {"concurrency": 2}})
    wait(condition_is(kube, "running", namespace, "WorkersReady", "False", "WorkersRefused"))
    never_ready(kube, operator, "running", namespace)

    # Deleting a refused Queue completes, and drops its table as its deletionPolicy says.
    delete(kube, namespace, "hpa")
    assert "hpa" not in table_names(postgres_url)

    # Lifted: everything heals by itself.
    refusing(False)
    for name in ("plain", "fixed", "running"):
        wait_ready(kube, name, namespace, timeout=180)  # the next retry of its back-off
    wait(lambda: replicas_of(kube, "running", namespace) == 3, timeout=60)
    assert get(kube, "deployment", "plain-workers", namespace) is not None
    assert "Traceback" not in operator.log() and operator.alive
    delete(kube, namespace, "plain", "fixed", "running")
