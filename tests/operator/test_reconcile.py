"""A Queue becomes its table, registry row, worker Deployment, status and Events; a restarted
operator resumes without duplicating anything; many Queues at once all become ready."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tablequeue import Failure, connect
from tests.operator.conftest import (
    SHARED_TABLES,
    messages,
    replicas_of,
    status_of,
    table_names,
    wait,
)
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import (
    Operator,
    apply,
    conditions,
    events,
    get,
    queue,
    secret,
    wait_ready,
    warnings_but_index_lock_retries,
)

# The first test may build the control plane (minutes on a cold machine); later runs start it in
# seconds from the user's cache folder.
pytestmark = pytest.mark.timeout(600)


def table_rows(text: str) -> list[dict[str, str]]:
    """kubectl's table output, by column (cells may be blank)."""
    header, *lines = text.splitlines()
    starts = [match.start() for match in re.finditer(r"\S+", header)]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    return [{header[a:b].strip(): line[a:b].strip() for a, b in bounds} for line in lines if line]


# --- create ---------------------------------------------------------------------------------------


def test_a_queue_gets_its_table_registry_row_deployment_status_and_events(
    kube: ControlPlane, namespace: str, clusterwide_operator: Operator, postgres_url: str
) -> None:
    apply(kube, secret("orders-db", namespace, postgres_url))
    apply(kube, queue("orders", namespace, "orders-db", category="Shop"))
    resource = wait_ready(kube, "orders", namespace)

    assert "orders" in table_names(postgres_url)
    with connect(postgres_url) as db:
        [row] = db.queues()
    assert (row["name"], row["table_name"], row["category"]) == ("orders", "orders", "Shop")
    assert row["default_status"] == "Pending"
    assert resource["status"]["effectiveDefaultStatus"] == "Pending"

    deployment = get(kube, "deployment", "orders-workers", namespace)
    assert deployment is not None
    [owner] = deployment["metadata"]["ownerReferences"]
    assert owner == {
        "apiVersion": "tablequeue.dev/v1",
        "kind": "Queue",
        "name": "orders",
        "uid": resource["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    containers = {c["name"]: c for c in deployment["spec"]["template"]["spec"]["containers"]}
    worker = containers["tablequeue-worker"]
    env = {e["name"]: e for e in worker["env"]}
    assert env["TABLEQUEUE_DB"]["valueFrom"] == {
        "secretKeyRef": {"name": "orders-db", "key": "url"}
    }
    assert env["TABLEQUEUE_QUEUE"]["value"] == "orders"
    assert deployment["spec"]["replicas"] == 0  # minReplicas, nothing to do yet

    # An empty queue shows 0 in its count columns, not blanks (status.counts has no key then).
    def zeros() -> dict[str, str] | None:
        [row] = table_rows(kube.kubectl("get", "tq", "-n", namespace).stdout)
        return row if (row["PENDING"], row["LEASED"], row["ERRORS"]) == ("0", "0", "0") else None

    wait(zeros)
    assert status_of(kube, "orders", namespace)["counts"] == {}

    # Something in every printer column: 3 Pending, 1 Leased, 1 Error (maxAttempts 1).
    with connect(postgres_url) as db:
        orders = db.queue("orders")
        orders.enqueue_many(messages(5))
        leased = orders.lease("test", 2).messages
        orders.fail("test", [Failure(leased[0], "boom")])

    def listed() -> dict[str, str] | None:
        [row] = table_rows(kube.kubectl("get", "tq", "-n", namespace).stdout)
        settled = row["PENDING"] == "3" and row["ERRORS"] == "1"  # not between lease and fail
        return row if settled and row["REPLICAS"] == "1" else None

    row = wait(listed)
    assert list(row) == [
        "NAME",
        "PENDING",
        "LEASED",
        "ERRORS",
        "REPLICAS",
        "HEALTH",
        "PAUSED",
        "READY",
        "AGE",
    ]
    assert row | {"AGE": "?"} == {
        "NAME": "orders",
        "PENDING": "3",
        "LEASED": "1",
        "ERRORS": "1",
        "REPLICAS": "1",
        "HEALTH": "Unhealthy",
        "PAUSED": "false",
        "READY": "True",
        "AGE": "?",
    }
    status = status_of(kube, "orders", namespace)
    assert status["counts"] == {"Pending": 3, "Leased": 1, "Error": 1}
    assert status["backlog"] == 3
    assert status["observedGeneration"] == resource["metadata"]["generation"]
    found = conditions({"status": status})
    assert {kind: (c["status"], c["reason"]) for kind, c in found.items()} == {
        "Ready": ("True", "Reconciled"),
        "TableReady": ("True", "TableReady"),
        "DatabaseReachable": ("True", "Connected"),
        "WorkersReady": ("False", "WorkersStarting"),  # no kubelet: Pods never get ready
        "Paused": ("False", "Running"),
    }
    assert all(c["lastTransitionTime"] and c["message"] for c in found.values())
    assert found["DatabaseReachable"]["message"] == postgres_url  # (it has no password)

    posted = {(e["type"], e["reason"], e["message"]) for e in events(kube, namespace, "orders")}
    assert ("Normal", "Table", "table orders created") in posted
    assert ("Normal", "Workers", "created Deployment orders-workers") in posted
    assert any(e[:2] == ("Normal", "Scaled") and e[2].startswith("workers 0 -> 1") for e in posted)


# --- restart --------------------------------------------------------------------------------------


def test_a_restarted_operator_resumes_without_duplicating_anything(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    apply(kube, secret("db", namespace, postgres_url), queue("before", namespace))
    wait_ready(kube, "before", namespace)
    apply(kube, queue("during", namespace))
    operator.kill()  # maybe mid-way through "during", maybe before it saw it
    with connect(postgres_url) as db:
        db.queue("before").enqueue_many(messages(250))
    operator.start()

    for name in ("before", "during"):
        wait_ready(kube, name, namespace)
    wait(lambda: status_of(kube, "before", namespace).get("counts") == {"Pending": 250})
    wait(lambda: replicas_of(kube, "before", namespace) == 3)
    with connect(postgres_url) as db:
        assert sorted(q["name"] for q in db.queues()) == ["before", "during"]
        db.queue("during").enqueue({"n": 1})
    wait(lambda: status_of(kube, "during", namespace).get("counts") == {"Pending": 1})
    assert table_names(postgres_url) == sorted(["before", "during", *SHARED_TABLES])
    deployments = kube.kubectl_json("get", "deployments", "-n", namespace)["items"]
    assert sorted(d["metadata"]["name"] for d in deployments) == [
        "before-workers",
        "during-workers",
    ]
    replicasets = kube.kubectl_json("get", "replicasets", "-n", namespace)["items"]
    assert len(replicasets) == 2  # the restart did not change the Pod template
    posted = [(e["reason"], e["message"]) for e in events(kube, namespace)]
    assert posted.count(("Workers", "created Deployment before-workers")) == 1
    # The kill may land between creating "during"'s table or Deployment and posting its Event
    # (the restarted operator finds them made): at most one Event of each, never two.
    for name in ("before", "during"):
        assert posted.count(("Workers", f"created Deployment {name}-workers")) <= 1
        assert posted.count(("Table", f"table {name} created")) <= 1
    assert not warnings_but_index_lock_retries(kube, namespace)
    assert "Traceback" not in operator.log()


# --- many Queues ----------------------------------------------------------------------------------


def test_fifty_queues_applied_at_once_all_become_ready(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    names = [f"q{n:02d}" for n in range(50)]
    apply(kube, secret("db", namespace, postgres_url), *(queue(n, namespace) for n in names))

    def not_ready() -> dict[str, Any]:
        items = kube.kubectl_json("get", "queues", "-n", namespace)["items"]
        found = {q["metadata"]["name"]: conditions(q).get("Ready") for q in items}
        missing = {name: "not listed" for name in names if name not in found}
        return missing | {n: c for n, c in found.items() if (c or {}).get("status") != "True"}

    # 9 s on a quiet machine; a loaded one (other test processes, builds) has taken over 120 s.
    try:
        wait(lambda: not not_ready(), timeout=300)
    except AssertionError:
        raise AssertionError(f"not Ready after 300 s: {not_ready()}") from None
    assert table_names(postgres_url) == sorted([*names, *SHARED_TABLES])
    deployments = kube.kubectl_json("get", "deployments", "-n", namespace)["items"]
    assert len(deployments) == 50
    assert operator.alive
