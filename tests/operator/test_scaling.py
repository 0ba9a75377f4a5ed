"""Scaling the workers: Operator mode follows the backlog and keeps workers for leased
messages; HPA mode hands the count to a HorizontalPodAutoscaler, never at zero replicas; the
default status."""

from __future__ import annotations

import pytest

from tablequeue import Completion, connect
from tests.operator.conftest import (
    messages,
    patch,
    replicas_of,
    status_of,
    wait,
    wait_ticks,
    warnings,
)
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import (
    Operator,
    apply,
    events,
    get,
    queue,
    secret,
    wait_ready,
)

# The first test may build the control plane (minutes on a cold machine); later runs start it in
# seconds from the user's cache folder.
pytestmark = pytest.mark.timeout(600)


HANDED_TO_HPA = "workers 0 -> 1 (HPA mode: an HPA cannot scale from zero)"


def scaled_events(kube: ControlPlane, namespace: str, name: str) -> list[str]:
    return [e["message"] for e in events(kube, namespace, name) if e["reason"] == "Scaled"]


def hpa_range(kube: ControlPlane, name: str, namespace: str) -> tuple[int, int] | None:
    """The HPA's (minReplicas, maxReplicas), None before it exists."""
    hpa = get(kube, "hpa", f"{name}-workers", namespace)
    return None if hpa is None else (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"])


# --- Operator-mode scaling -------------------------------------------------------------------


def test_operator_mode_scales_with_the_backlog_and_keeps_workers_for_leased_messages(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    autoscaling = {
        "mode": "Operator",
        "minReplicas": 0,
        "maxReplicas": 5,
        "messagesPerReplica": 100,
        "cooldownSeconds": 3,
    }
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("jobs", namespace, workers={"autoscaling": autoscaling}),
    )
    wait_ready(kube, "jobs", namespace)
    db = connect(postgres_url)
    try:
        jobs = db.queue("jobs")
        jobs.enqueue_many(messages(1000))
        wait(lambda: replicas_of(kube, "jobs", namespace) == 5)
        wait(lambda: status_of(kube, "jobs", namespace).get("counts") == {"Pending": 1000})
        status = status_of(kube, "jobs", namespace)
        assert (status["backlog"], status["replicas"]["desired"]) == (1000, 5)

        # 50 in the hands of a worker, the rest purged: one replica stays for the leased work.
        batch = jobs.lease("w", 50)
        assert len(batch.messages) == 50
        assert jobs.purge(statuses=["Pending"]) == 950
        # Pending disappears from status.counts (a merge patch needs it set to null).
        wait(lambda: status_of(kube, "jobs", namespace).get("counts") == {"Leased": 50})
        wait(lambda: replicas_of(kube, "jobs", namespace) == 1)
        wait_ticks(operator, "jobs", 4)  # more than the cooldown
        assert replicas_of(kube, "jobs", namespace) == 1
        assert status_of(kube, "jobs", namespace)["replicas"]["desired"] == 1

        jobs.complete("w", [Completion(m) for m in batch.messages])
        wait(lambda: status_of(kube, "jobs", namespace).get("counts") == {})
        wait(lambda: replicas_of(kube, "jobs", namespace) == 0, timeout=60)
    finally:
        db.close()
    # The operator posts its Event just after it scales: wait for the last one to arrive.
    expected = [
        "workers 0 -> 5 (backlog 1000, leased 0)",
        "workers 5 -> 1 (backlog 0, leased 50)",
        "workers 1 -> 0 (backlog 0, leased 0)",
    ]
    wait(lambda: len(scaled_events(kube, namespace, "jobs")) >= len(expected))
    assert scaled_events(kube, namespace, "jobs") == expected
    assert status_of(kube, "jobs", namespace)["backlog"] == 0


def test_operator_mode_scales_to_what_the_global_concurrency_uses_and_to_the_minimum_when_paused(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    autoscaling = {"mode": "Operator", "maxReplicas": 8, "messagesPerReplica": 10}
    workers = {"concurrency": 2, "autoscaling": autoscaling | {"cooldownSeconds": 0}}
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("capped", namespace, globalConcurrency=5, workers=workers),
    )
    wait_ready(kube, "capped", namespace)
    with connect(postgres_url) as db:
        db.queue("capped").enqueue_many(messages(1000))
        # ceil(5 / 2) = 3 replicas hold all the limit lets run, not the backlog's 8.
        wait(lambda: replicas_of(kube, "capped", namespace) == 3)
        db.pause("capped")  # at runtime
        wait(lambda: replicas_of(kube, "capped", namespace) == 0)
        db.resume("capped")
        wait(lambda: replicas_of(kube, "capped", namespace) == 3)
    expected = [
        "workers 0 -> 3 (backlog 1000, leased 0)",
        "workers 3 -> 0 (backlog 1000, leased 0, paused)",
        "workers 0 -> 3 (backlog 1000, leased 0)",
    ]
    wait(lambda: len(scaled_events(kube, namespace, "capped")) >= len(expected))
    assert scaled_events(kube, namespace, "capped") == expected


# --- default status, HPA mode ---------------------------------------------------------------------


def test_default_status_change_and_switching_to_hpa_and_back(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("mail", namespace, workers={"autoscaling": {"maxReplicas": 4, "cooldownSeconds": 2}}),
    )
    wait_ready(kube, "mail", namespace)
    db = connect(postgres_url)
    try:
        patch(kube, "mail", namespace, {"defaultStatus": "Paused"})
        wait(lambda: status_of(kube, "mail", namespace).get("effectiveDefaultStatus") == "Paused")
        assert db.default_status_of("mail") == "Paused"
        mail = db.queue("mail")
        assert {e.status for e in mail.enqueue_many(messages(300))} == {"Paused"}
        wait(lambda: status_of(kube, "mail", namespace).get("counts") == {"Paused": 300})
        assert status_of(kube, "mail", namespace)["backlog"] == 0
        assert replicas_of(kube, "mail", namespace) == 0

        patch(kube, "mail", namespace, {"workers": {"autoscaling": {"mode": "HPA"}}})
        hpa = wait(lambda: get(kube, "hpa", "mail-workers", namespace))
        assert hpa["apiVersion"] == "autoscaling/v2"
        assert hpa["spec"]["scaleTargetRef"] == {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "mail-workers",
        }
        assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 4)
        [metric] = hpa["spec"]["metrics"]
        assert metric["external"]["metric"] == {
            "name": "tablequeue_backlog",
            "selector": {"matchLabels": {"queue": "mail", "namespace": namespace}},
        }
        assert metric["external"]["target"] == {"type": "AverageValue", "averageValue": "100"}
        assert hpa["metadata"]["ownerReferences"][0]["kind"] == "Queue"

        # Scale from zero: the HPA controller leaves a Deployment at 0 replicas alone for good
        # ("autoscaling disabled"), so the operator hands it over at the HPA's minReplicas.
        wait(lambda: replicas_of(kube, "mail", namespace) == 1)
        wait(lambda: HANDED_TO_HPA in scaled_events(kube, namespace, "mail"))  # posted just after
        # ... and puts it back there if anything scales it to 0. The operator may do so before
        # any poll sees the 0 (its timer ticks every second): the Deployment's generation tells
        # that its spec changed again after the scale (which kubectl has applied when it returns).
        scaled = get(kube, "deployment", "mail-workers", namespace)
        assert scaled is not None
        before = scaled["metadata"]["generation"]
        kube.kubectl("scale", "deployment", "mail-workers", "-n", namespace, "--replicas=0")

        def restored() -> bool:
            deployment = get(kube, "deployment", "mail-workers", namespace)
            return (
                deployment is not None
                and deployment["metadata"]["generation"] >= before + 2
                and deployment["spec"]["replicas"] == 1
            )

        wait(restored)
        wait(lambda: status_of(kube, "mail", namespace)["replicas"]["desired"] == 1)

        # A backlog that would mean 3 replicas: in HPA mode the operator leaves the count to the
        # HPA (which has no metrics API in this control plane: tests/deploy runs one).
        scaled_before = scaled_events(kube, namespace, "mail")
        assert mail.set_status("Pending", from_status="Paused") == 300
        wait(lambda: status_of(kube, "mail", namespace).get("backlog") == 300)
        wait_ticks(operator, "mail", 3)
        assert replicas_of(kube, "mail", namespace) == 1
        assert scaled_events(kube, namespace, "mail") == scaled_before

        # Paused at runtime, the HPA may scale to its minimum only; resumed, up to 4 again.
        db.pause("mail")
        wait(lambda: hpa_range(kube, "mail", namespace) == (1, 1))
        db.resume("mail")
        wait(lambda: hpa_range(kube, "mail", namespace) == (1, 4))

        patch(kube, "mail", namespace, {"workers": {"autoscaling": {"mode": "Operator"}}})
        wait(lambda: get(kube, "hpa", "mail-workers", namespace) is None)
        wait(lambda: replicas_of(kube, "mail", namespace) == 3)
    finally:
        db.close()
    reasons = [e["reason"] for e in events(kube, namespace, "mail")]
    assert reasons.count("Autoscaling") == 2  # created, then deleted the HPA
    assert not warnings(kube, namespace, "mail")
