"""Busy worker pods are the last removed on scale-in: the operator keeps each worker pod's
`controller.kubernetes.io/pod-deletion-cost` at its messages in flight (bucketed), from the
heartbeats in `tablequeue_workers`, and writes nothing while they stay the same.

There is no kubelet: the test makes the worker pods itself, with the Deployment's labels (they
stay Pending), and heartbeats for them as a worker in each would (host = the pod's name)."""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import pytest
from kubernetes.client.exceptions import ApiException

from tablequeue import Database, Heartbeat, WorkerInfo, connect
from tablequeue.operator import builders
from tablequeue.operator.deletion_cost import DELETION_COST, bucket, changes, in_flight_by_pod
from tablequeue.operator.kube import Kube
from tablequeue.operator.observe import _keep_deletion_costs
from tablequeue.operator.state import OperatorState, Settings
from tests.operator.conftest import wait, wait_ticks
from tests.operator.test_metrics import sample
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import Operator, apply, queue, secret, wait_ready

# --- the pure parts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("in_flight", "cost"),
    [(0, 0), (1, 1), (2, 2), (3, 2), (4, 4), (7, 4), (8, 8), (1000, 512), (-1, 0)],
)
def test_the_cost_is_the_largest_power_of_two_not_above_the_count(
    in_flight: int, cost: int
) -> None:
    assert bucket(in_flight) == cost


def worker(host: str, in_flight: int, seconds_since_seen: float = 1.0) -> WorkerInfo:
    now = datetime.now(UTC)
    return WorkerInfo(
        worker_id=f"{host}-{in_flight}-{seconds_since_seen}",
        queue="jobs",
        host=host,
        pid=1,
        version="test",
        heartbeat_seconds=5.0,
        started_at=now - timedelta(minutes=1),
        last_seen=now,
        seconds_since_seen=seconds_since_seen,
        in_flight=in_flight,
        processed=0,
        failed=0,
    )


def test_in_flight_counts_the_live_workers_of_each_pod() -> None:
    workers = [
        worker("a", 3),
        worker("a", 2),  # two live rows of one pod: a restarted worker container, say
        worker("b", 9, seconds_since_seen=600),  # stale: what it held runs no more
        worker("c", 0),
    ]
    assert in_flight_by_pod(workers) == {"a": 5, "c": 0}


def pod(name: str, cost: str | None = None, deleted: bool = False) -> Any:
    annotations = None if cost is None else {DELETION_COST: cost, "team": "shop"}
    return SimpleNamespace(
        metadata=SimpleNamespace(
            name=name,
            annotations=annotations,
            deletion_timestamp=datetime.now(UTC) if deleted else None,
        )
    )


def test_only_pods_whose_cost_changed_are_patched() -> None:
    pods = [
        pod("same", "4"),
        pod("same-bucket", "4"),
        pod("up", "1"),
        pod("down", "8"),
        pod("idle-unannotated"),
        pod("busy-unannotated"),
        pod("gone", "0", deleted=True),
    ]
    in_flight = {"same": 4, "same-bucket": 6, "up": 2, "busy-unannotated": 1, "gone": 8}
    assert changes(pods, in_flight) == {"up": "2", "down": "0", "busy-unannotated": "1"}


class RefusingKube:
    """An API server that refuses to list pods (an operator upgraded without its RBAC rule)."""

    def __init__(self) -> None:
        self.lists = 0

    def pods(self, namespace: str, labels: dict[str, str]) -> list[Any]:
        self.lists += 1
        raise ApiException(status=403, reason="Forbidden")


def test_a_refusal_is_logged_once_not_on_every_tick(caplog: pytest.LogCaptureFixture) -> None:
    state = OperatorState(Settings())
    refusing = RefusingKube()
    state.kube_client = cast(Kube, refusing)
    with caplog.at_level(logging.WARNING, logger="tablequeue.operator.observe"):
        for _ in range(3):
            _keep_deletion_costs(state, "shop", "jobs", [worker("a", 1)])
    assert refusing.lists == 3
    [record] = caplog.records
    assert "cannot keep the pods' deletion cost: HTTP 403 Forbidden" in record.getMessage()


# --- against the API server ----------------------------------------------------------------------


def worker_pod(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": builders.labels("jobs")},
        "spec": {"containers": [{"name": "app", "image": "shop/app:1"}]},
    }


def beat(db: Database, pod_name: str, in_flight: int) -> None:
    """The heartbeat a worker in that pod sends (its host is POD_NAME)."""
    db.heartbeat(
        Heartbeat(
            worker_id=f"{pod_name}-1-abc123",
            queue="jobs",
            host=pod_name,
            pid=os.getpid(),
            version="test",
            heartbeat_seconds=60.0,  # live for 3 minutes without another beat
            in_flight=in_flight,
        )
    )


def snapshot(kube: ControlPlane, namespace: str) -> dict[str, tuple[str | None, str]]:
    """Each worker pod's deletion cost (None: no annotation) and resourceVersion."""
    pods = kube.kubectl_json("get", "pods", "-n", namespace)["items"]
    return {
        p["metadata"]["name"]: (
            (p["metadata"].get("annotations") or {}).get(DELETION_COST),
            p["metadata"]["resourceVersion"],
        )
        for p in pods
    }


def costs(kube: ControlPlane, namespace: str) -> dict[str, str | None]:
    return {name: cost for name, (cost, _) in snapshot(kube, namespace).items()}


def patches(operator: Operator, namespace: str) -> float:
    found = sample(
        operator.metrics(),
        "tablequeue_operator_deletion_cost_patches_total",
        namespace=namespace,
        queue="jobs",
    )
    return found or 0.0


def test_each_worker_pods_deletion_cost_follows_its_messages_in_flight_and_idle_costs_no_writes(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    apply(
        kube,
        secret("db", namespace, postgres_url),
        # No scaler: the Deployment stays at 0 replicas and the test's pods are the workers'.
        queue("jobs", namespace, workers={"autoscaling": {"mode": "None"}}),
    )
    wait_ready(kube, "jobs", namespace)
    apply(kube, *(worker_pod(name, namespace) for name in ("busy", "light", "idle")))
    db = connect(postgres_url)
    try:
        beat(db, "busy", 4)
        beat(db, "light", 1)
        beat(db, "idle", 0)
        wait(lambda: costs(kube, namespace) == {"busy": "4", "light": "1", "idle": None})
        wait(lambda: patches(operator, namespace) == 2)  # none for the idle pod: absent is 0

        # Nothing changes: no write on the following ticks (each pod's resourceVersion stays).
        before = snapshot(kube, namespace)
        wait_ticks(operator, "jobs", 3)
        assert snapshot(kube, namespace) == before
        assert patches(operator, namespace) == 2

        # The counts move: the costs follow, in buckets.
        beat(db, "busy", 0)
        beat(db, "light", 8)
        beat(db, "idle", 5)
        wait(lambda: costs(kube, namespace) == {"busy": "0", "light": "8", "idle": "4"})
        wait(lambda: patches(operator, namespace) == 5)

        # Within their buckets (8..15, 4..7) and idle again: no write.
        beat(db, "light", 15)
        beat(db, "idle", 6)
        before = snapshot(kube, namespace)
        wait_ticks(operator, "jobs", 3)
        assert snapshot(kube, namespace) == before
        assert patches(operator, namespace) == 5

        # A worker that stops cleanly forgets its row: its pod is idle.
        assert db.forget_worker("light-1-abc123")
        wait(lambda: costs(kube, namespace) == {"busy": "0", "light": "0", "idle": "4"})
    finally:
        db.close()
