"""KEDA mode against KEDA's real CRDs in the real API server: the operator keeps a ScaledObject
and a TriggerAuthentication per Queue (the API server checks them against KEDA's schemas), owned
by the Queue, and deletes them when the mode changes; a database KEDA cannot read is a Warning.

KEDA's operator does not run in these tests, so the Deployment's count stays where the operator
created it: tests/deploy/test_autoscaling_keda.py runs KEDA's real operator (built from its Go
module) and shows it scaling the Deployment 0 -> 1 -> 0."""

from __future__ import annotations

from typing import Any

import pytest

from tablequeue import connect
from tablequeue.operator import keda
from tests.operator.conftest import messages, patch, replicas_of, status_of, wait, wait_ticks
from tests.support.deploy_tools import deploy_tools
from tests.support.keda import keda_crds
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import (
    Operator,
    apply,
    condition_is,
    events,
    get,
    queue,
    secret,
    wait_ready,
)

__all__ = ["deploy_tools", "keda_crds"]  # fixtures, for this module
pytestmark = pytest.mark.timeout(600)


def keda_objects(
    kube: ControlPlane, name: str, namespace: str, complete: bool = False
) -> dict[str, Any]:
    """The Queue's ScaledObject, TriggerAuthentication and HPA, by kind, those that exist;
    `complete`: both of KEDA's, or nothing."""
    found = {
        kind: get(kube, kind, f"{name}-workers", namespace)
        for kind in ("scaledobject", "triggerauthentication", "hpa")
    }
    existing = {kind: body for kind, body in found.items() if body is not None}
    if complete and set(existing) != {"scaledobject", "triggerauthentication"}:
        return {}
    return existing


def test_keda_mode_keeps_a_scaled_object_and_deletes_it_when_the_mode_changes(
    kube: ControlPlane, keda_crds: None, namespace: str, operator: Operator, postgres_url: str
) -> None:
    autoscaling = {
        "mode": "KEDA",
        "maxReplicas": 6,
        "messagesPerReplica": 50,
        "cooldownSeconds": 20,
    }
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("jobs", namespace, workers={"autoscaling": autoscaling}),
    )
    wait_ready(kube, "jobs", namespace)
    found = wait(lambda: keda_objects(kube, "jobs", namespace, complete=True))
    scaled, authentication = found["scaledobject"], found["triggerauthentication"]
    assert scaled["metadata"]["ownerReferences"][0]["kind"] == "Queue"
    assert scaled["spec"]["scaleTargetRef"]["name"] == "jobs-workers"
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (0, 6)
    assert (scaled["spec"]["cooldownPeriod"], scaled["spec"]["pollingInterval"]) == (20, 1)
    [trigger] = scaled["spec"]["triggers"]
    assert trigger["type"] == "postgresql"
    assert trigger["metadata"] == {
        "query": keda.load_query("jobs"),
        "targetQueryValue": "50",
        "activationTargetQueryValue": "0",
    }
    assert trigger["authenticationRef"] == {"name": "jobs-workers"}
    assert authentication["spec"]["secretTargetRef"] == [
        {"parameter": "connection", "name": "db", "key": "url"}
    ]
    assert authentication["metadata"]["ownerReferences"][0]["kind"] == "Queue"

    # The count is KEDA's: the operator created the Deployment at minReplicas and leaves it.
    db = connect(postgres_url)
    try:
        db.queue("jobs").enqueue_many(messages(300))
        wait(lambda: status_of(kube, "jobs", namespace).get("backlog") == 300)
        wait_ticks(operator, "jobs", 3)
        assert replicas_of(kube, "jobs", namespace) == 0
        assert status_of(kube, "jobs", namespace)["replicas"]["desired"] == 0

        # Paused at runtime: KEDA holds the workers at the minimum until the queue resumes.
        def paused_replicas() -> str | None:
            scaled = get(kube, "scaledobject", "jobs-workers", namespace) or {"metadata": {}}
            return (scaled["metadata"].get("annotations") or {}).get(keda.PAUSED_REPLICAS)

        db.pause("jobs")
        wait(lambda: paused_replicas() == "0")
        db.resume("jobs")
        wait(lambda: paused_replicas() is None)
    finally:
        db.close()

    # HPA mode: KEDA's objects go, the HPA comes, the Deployment is handed over at 1.
    patch(kube, "jobs", namespace, {"workers": {"autoscaling": {"mode": "HPA"}}})
    wait(lambda: set(keda_objects(kube, "jobs", namespace)) == {"hpa"})
    wait(lambda: replicas_of(kube, "jobs", namespace) == 1)

    # Back to KEDA: the HPA goes, the ScaledObject and its authentication come back.
    patch(kube, "jobs", namespace, {"workers": {"autoscaling": {"mode": "KEDA"}}})
    wait(lambda: keda_objects(kube, "jobs", namespace, complete=True))

    # Operator mode: nothing of KEDA's is left, the operator scales by itself (300 / 50).
    patch(kube, "jobs", namespace, {"workers": {"autoscaling": {"mode": "Operator"}}})
    wait(lambda: not keda_objects(kube, "jobs", namespace))
    wait(lambda: replicas_of(kube, "jobs", namespace) == 6)

    # (Events are ordered to the second only, and posted just after what they tell.)
    def notes() -> list[str]:
        found = events(kube, namespace, "jobs")
        return sorted(e["message"] for e in found if e["reason"] == "Autoscaling")

    expected = sorted(
        [
            "created TriggerAuthentication jobs-workers",
            "created ScaledObject jobs-workers",
            "ScaledObject jobs-workers held at the minimum: paused",
            "ScaledObject jobs-workers scaling again: resumed",
            "deleted ScaledObject jobs-workers",
            "deleted TriggerAuthentication jobs-workers",
            "created HorizontalPodAutoscaler jobs-workers",
            "deleted HorizontalPodAutoscaler jobs-workers",
            "created TriggerAuthentication jobs-workers",
            "created ScaledObject jobs-workers",
            "deleted ScaledObject jobs-workers",
            "deleted TriggerAuthentication jobs-workers",
        ]
    )
    wait(lambda: len(notes()) >= len(expected))
    assert notes() == expected


def test_keda_mode_with_a_url_keda_cannot_read_is_a_warning(
    kube: ControlPlane, keda_crds: None, namespace: str, operator: Operator, postgres_url: str
) -> None:
    sqlalchemy_url = postgres_url.replace("postgresql://", "postgresql+psycopg://", 1)
    apply(
        kube,
        secret("db", namespace, sqlalchemy_url),
        queue("mail", namespace, workers={"autoscaling": {"mode": "KEDA"}}),
    )
    reason = "KEDAUnsupportedDatabase"
    found = wait(condition_is(kube, "mail", namespace, "WorkersReady", "False", reason))
    message = found["status"]["conditions"]
    assert "write it as postgresql://..., not postgresql+psycopg://" in str(message)
    warned = [e for e in events(kube, namespace, "mail") if e["type"] == "Warning"]
    assert warned and warned[0]["reason"] == reason
    assert not keda_objects(kube, "mail", namespace)

    # The Secret fixed: the next retry makes KEDA's objects.
    apply(kube, secret("db", namespace, postgres_url))
    wait(lambda: keda_objects(kube, "mail", namespace, complete=True), timeout=60)
