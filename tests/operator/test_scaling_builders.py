"""Scaling decisions as pure functions, without a cluster: the replicas the operator writes in
each mode (HPA mode never left at zero), the HPA's floor, and the mode/database combinations the
spec and the CRD refuse."""

from __future__ import annotations

from typing import Any

import pytest

from tablequeue.errors import SpecError
from tablequeue.operator import builders, keda
from tablequeue.operator.crd import custom_resource_definition
from tablequeue.spec import QueueResource, QueueSpec

OWNER = {"apiVersion": "tablequeue.dev/v1", "kind": "Queue", "name": "orders", "uid": "u-1"}


def spec(mode: str, min_replicas: int = 0, **database: Any) -> QueueSpec:
    return QueueResource.from_name(
        "orders",
        database={"secret_ref": {"name": "orders-db"}} | database,
        workers={"autoscaling": {"mode": mode, "min_replicas": min_replicas, "max_replicas": 9}},
    ).spec


@pytest.mark.parametrize(
    ("mode", "min_replicas", "current", "replicas"),
    [
        # A new Deployment starts at minReplicas; an HPA's at its floor of 1.
        ("Operator", 0, None, 0),
        ("None", 2, None, 2),
        ("KEDA", 0, None, 0),
        ("HPA", 0, None, 1),
        ("HPA", 3, None, 3),
        # An existing one keeps what its scaler set ...
        ("Operator", 0, 4, 4),
        ("None", 0, 0, 0),
        ("KEDA", 0, 0, 0),
        ("HPA", 0, 6, 6),
        # ... except an HPA's target at 0, which the HPA controller would never touch again.
        ("HPA", 0, 0, 1),
        ("HPA", 2, 0, 2),
    ],
)
def test_workers_replicas_per_mode(
    mode: str, min_replicas: int, current: int | None, replicas: int
) -> None:
    assert builders.workers_replicas(spec(mode, min_replicas), current) == replicas


@pytest.mark.parametrize(("min_replicas", "floor"), [(0, 1), (1, 1), (4, 4)])
def test_hpa_min_replicas_is_at_least_one(min_replicas: int, floor: int) -> None:
    queue = spec("HPA", min_replicas)
    assert builders.hpa_min_replicas(queue) == floor
    hpa = builders.horizontal_pod_autoscaler("orders", "shop", queue, OWNER)
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (floor, 9)


def test_hpa_scales_down_after_the_cooldown() -> None:
    queue = QueueResource.from_name(
        "orders",
        database={"secret_ref": {"name": "orders-db"}},
        workers={"autoscaling": {"mode": "HPA", "cooldown_seconds": 12.5}},
    ).spec
    hpa = builders.horizontal_pod_autoscaler("orders", "shop", queue, OWNER)
    assert hpa["spec"]["behavior"] == {"scaleDown": {"stabilizationWindowSeconds": 13}}


def test_keda_mode_refuses_a_database_keda_cannot_read() -> None:
    assert spec("KEDA", dialect="postgresql").workers.autoscaling.mode == "KEDA"
    assert spec("KEDA").workers.autoscaling.mode == "KEDA"  # dialect from the URL: checked live
    with pytest.raises(SpecError, match=r"KEDA.s postgresql scaler: database\.dialect sqlite"):
        spec("KEDA", dialect="sqlite")
    assert spec("HPA", dialect="sqlite").workers.autoscaling.mode == "HPA"


def test_the_crd_refuses_the_same_combination() -> None:
    [version] = custom_resource_definition()["spec"]["versions"]
    rules = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"]
    assert any(
        "self.workers.autoscaling.mode != 'KEDA'" in rule["rule"]
        and "self.database.dialect == 'postgresql'" in rule["rule"]
        for rule in rules
    )


# --- what the queue can use: its global concurrency, a pause ---------------------------------


def limited(mode: str, pause: bool = False, **autoscaling: Any) -> QueueSpec:
    return QueueResource.from_name(
        "orders",
        database={"secret_ref": {"name": "orders-db"}},
        global_concurrency=5,
        paused=pause,
        workers={
            "concurrency": 2,
            "autoscaling": {"mode": mode, "max_replicas": 9} | autoscaling,
        },
    ).spec


def test_no_scaler_asks_for_more_replicas_than_the_global_concurrency_keeps_busy() -> None:
    queue = limited("Operator")  # ceil(5 / 2) = 3 replicas hold all 5 messages at once
    assert builders.most_useful_replicas(queue) == 3
    assert builders.scale(queue, 1000, 0, 0, 0, 100).replicas == 3
    assert builders.scale(queue, 1000, 0, 9, 0, 100).replicas == 3  # from above too
    hpa = builders.horizontal_pod_autoscaler("orders", "shop", limited("HPA"), OWNER)
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 3)
    scaled = keda.scaled_object("orders", "shop", limited("KEDA"), OWNER, 2).get("spec", {})
    assert (scaled["minReplicaCount"], scaled["maxReplicaCount"]) == (0, 3)
    # A minimum above what the queue can use is lowered to it, never the other way round.
    assert builders.fewest_replicas(limited("Operator", min_replicas=6)) == 3
    assert builders.workers_replicas(limited("None", min_replicas=6), None) == 3
    # Without a global concurrency, maxReplicas as ever.
    assert builders.most_useful_replicas(spec("Operator")) == 9


def test_a_paused_queue_scales_to_its_minimum() -> None:
    queue = limited("Operator", min_replicas=1, cooldown_seconds=10, messages_per_replica=2)
    # The backlog no longer counts; leased messages still do, and the cooldown holds.
    assert builders.scale(queue, 1000, 0, 3, 0, 100, paused=True).replicas == 1
    assert builders.scale(queue, 1000, 4, 3, 0, 100, paused=True).replicas == 2
    assert builders.scale(queue, 1000, 0, 3, 95, 100, paused=True).replicas == 3
    hpa = builders.horizontal_pod_autoscaler("orders", "shop", limited("HPA", True), OWNER)
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 1)
    scaled = keda.scaled_object("orders", "shop", limited("KEDA", True), OWNER, 2)
    assert scaled["metadata"]["annotations"] == {keda.PAUSED_REPLICAS: "0"}
    running = keda.scaled_object("orders", "shop", limited("KEDA"), OWNER, 2)
    assert "annotations" not in running["metadata"]
    # Paused at runtime (the spec says nothing): the same hold.
    hpa = builders.horizontal_pod_autoscaler("orders", "shop", limited("HPA"), OWNER, paused=True)
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 1)
    scaled = keda.scaled_object("orders", "shop", limited("KEDA"), OWNER, 2, paused=True)
    assert scaled["metadata"]["annotations"] == {keda.PAUSED_REPLICAS: "0"}


def rate_limited(handler: dict[str, Any], **workers: Any) -> QueueSpec:
    return QueueResource.from_name(
        "orders",
        rate_limit={"messages_per_second": 10, "burst": 5},
        workers={"handler": handler, "autoscaling": {"max_replicas": 50}} | workers,
    ).spec


def test_a_rate_limit_caps_the_replicas_when_handlers_have_a_time_limit() -> None:
    # An HTTP handler runs at most its request timeout: at most burst + rate x timeout handlers
    # at once (5 + 10 x 3 = 35), held by ceil(35 / 4) = 9 replicas of concurrency 4.
    http = {"http": {"timeout_seconds": 3}}
    assert builders.rate_limit_replicas(rate_limited(http)) == 9
    assert builders.most_useful_replicas(rate_limited(http)) == 9
    # executionTimeoutSeconds bounds a Python handler, and the shorter of the two wins.
    python = {"python": "shop:handle"}
    assert builders.rate_limit_replicas(rate_limited(python, execution_timeout_seconds=1.5)) == 5
    assert builders.rate_limit_replicas(rate_limited(http, execution_timeout_seconds=1)) == 4
    # Without a time limit nothing bounds how long a rate keeps a worker busy: no cap.
    assert builders.rate_limit_replicas(rate_limited(python)) is None
    assert builders.most_useful_replicas(rate_limited(python)) == 50
    # The tighter of the two limits wins; never fewer than one replica.
    tight = rate_limited(http, concurrency=1000)
    assert builders.most_useful_replicas(tight) == 1
    both = QueueResource.from_name(
        "orders",
        rate_limit={"messages_per_second": 10, "burst": 5},
        global_concurrency=8,
        workers={"handler": http, "autoscaling": {"max_replicas": 50}},
    ).spec
    assert builders.most_useful_replicas(both) == 2  # ceil(8 / 4) < 9
    hpa = builders.horizontal_pod_autoscaler("orders", "shop", rate_limited(http), OWNER)
    assert hpa["spec"]["maxReplicas"] == 9
