"""KEDA mode end to end with KEDA's real operator: the operator keeps the Queue's ScaledObject
(postgresql trigger on the operator's load query, TriggerAuthentication from the Queue's Secret),
KEDA's operator (built from its Go module by scripts/build-deploy-tools, see tests/support/keda.py)
polls the real PostgreSQL database with it and scales the worker Deployment through the scale
subresource: 0 -> 1 when messages arrive, back to 0 once the queue is drained and the cooldown has
passed. No kubelet: the Deployment's replicas move, Pods never run.

Not shown here: 1 -> N. Above one replica KEDA hands over to the HPA it creates, which reads
KEDA's external metric from KEDA's metrics API server (cmd/adapter, an aggregated API); that runs
with pods in tests/deploy/test_pods.py. The operator's own share of N (maxReplicaCount, target
per replica) is checked against KEDA's CRDs in tests/operator/test_keda.py.

The build (tools/deploy/keda/, measured on this project's 2-core machine): cold, 673 CPU-seconds
of `go build -p 2` (21 minutes of wall time on the machine shared with other builds, about 6 on
two idle cores), 2.7 GB peak memory (the link), about 290 MB of module zips that no other tool
here needs (253 modules; 1.2 GB unpacked in the module cache); a 169 MB binary. Warm (Go build
cache kept, a changed pin elsewhere): 9 s, a relink.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tablequeue import NewMessage, connect
from tests.support.keda import KedaOperator, keda_crds, keda_operator
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import (
    Operator,
    apply,
    events,
    get,
    operator,
    queue,
    secret,
    wait_ready,
)
from tests.support.waiting import wait_until

__all__ = ["keda_crds", "keda_operator", "operator"]  # fixtures, for this module
pytestmark = pytest.mark.timeout(600)

POLL = 0.25
DEADLINE = 180.0
"""Seconds for KEDA to act: it polls every second, but this machine is shared and loaded."""


def replicas_of(kube: ControlPlane, name: str, namespace: str) -> int | None:
    deployment = get(kube, "deployment", f"{name}-workers", namespace)
    return None if deployment is None else deployment["spec"].get("replicas")


def scaled_object_condition(kube: ControlPlane, name: str, namespace: str, kind: str) -> str | None:
    """The status ("True", "False", "Unknown") of a condition of the Queue's ScaledObject."""
    scaled = get(kube, "scaledobject", f"{name}-workers", namespace) or {}
    for condition in (scaled.get("status") or {}).get("conditions") or []:
        if condition["type"] == kind:
            return str(condition["status"])
    return None


def keda_reasons(kube: ControlPlane, name: str, namespace: str) -> list[str]:
    """Reasons of the events KEDA's operator posted on the Queue's ScaledObject."""
    return [
        e["reason"]
        for e in events(kube, namespace, f"{name}-workers")
        if e["involvedObject"]["kind"] == "ScaledObject"
    ]


def test_keda_scales_the_workers_from_zero_and_back_on_the_postgresql_backlog(
    kube: ControlPlane,
    namespace: str,
    operator: Operator,
    keda_operator: KedaOperator,
    postgres_url: str,
) -> None:
    autoscaling = {"mode": "KEDA", "maxReplicas": 4, "messagesPerReplica": 100}
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("jobs", namespace, workers={"autoscaling": autoscaling | {"cooldownSeconds": 5}}),
    )
    wait_ready(kube, "jobs", namespace)

    def keda(check: Any) -> Any:
        """wait_until, with KEDA's log in the failure."""

        def checked() -> Any:
            assert keda_operator.alive, f"KEDA's operator exited:\n{keda_operator.log_tail()}"
            return check()

        try:
            return wait_until(checked, timeout=DEADLINE, interval=POLL)
        except AssertionError as error:
            raise AssertionError(f"{error}\nKEDA's log:\n{keda_operator.log_tail()}") from None

    # KEDA took the ScaledObject (made its HPA, checked the trigger); the empty queue is idle.
    keda(lambda: scaled_object_condition(kube, "jobs", namespace, "Ready") == "True")
    keda(lambda: scaled_object_condition(kube, "jobs", namespace, "Active") == "False")
    hpa = keda(lambda: get(kube, "hpa", "keda-hpa-jobs-workers", namespace))
    assert hpa["spec"]["scaleTargetRef"]["name"] == "jobs-workers"
    assert replicas_of(kube, "jobs", namespace) == 0

    timings: dict[str, float] = {}
    db = connect(postgres_url)
    try:
        jobs = db.queue("jobs")
        began = time.monotonic()
        jobs.enqueue_many([NewMessage(message={"n": n}) for n in range(300)])
        keda(lambda: replicas_of(kube, "jobs", namespace) == 1)
        timings["300 enqueued, scaled 0 -> 1"] = time.monotonic() - began
        keda(lambda: scaled_object_condition(kube, "jobs", namespace, "Active") == "True")
        keda(lambda: "KEDAScaleTargetActivated" in keda_reasons(kube, "jobs", namespace))

        began = time.monotonic()
        assert jobs.purge(statuses=["Pending"]) == 300  # drained
        keda(lambda: replicas_of(kube, "jobs", namespace) == 0)
        timings["drained, scaled 1 -> 0 after the cooldown"] = time.monotonic() - began
        keda(lambda: "KEDAScaleTargetDeactivated" in keda_reasons(kube, "jobs", namespace))
    finally:
        db.close()

    # The count was KEDA's: the operator only reported it, it scaled nothing itself.
    def reported() -> Any:
        status = (get(kube, "queue", "jobs", namespace) or {}).get("status") or {}
        return status.get("replicas", {}).get("desired")

    wait_until(lambda: reported() == 0, timeout=60, interval=POLL)
    assert "Scaled" not in [e["reason"] for e in events(kube, namespace, "jobs")]
    print(f"KEDA end to end: {', '.join(f'{k} in {v:.1f}s' for k, v in timings.items())}")
