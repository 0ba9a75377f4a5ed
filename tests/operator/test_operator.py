"""The operator against a real control plane, run as in production.

`python -m tablequeue operator` is a subprocess (timer every second) with the credentials of a
ServiceAccount bound to the ClusterRole of operator/rbac.yaml; Queues, Secrets and patches go
through kubectl; messages through the core library against real PostgreSQL databases. There is no
kubelet: Deployments, ReplicaSets, HPAs and garbage collection are real, Pods never run (test 9
runs the worker sidecar as a local process, exactly as the Deployment describes it).
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from tablequeue import Completion, Database, Failure, NewMessage, connect
from tests.support.kube import ControlPlane
from tests.support.kube.control_plane import free_port
from tests.support.kube.fixtures import (
    Operator,
    apply,
    clusterwide_operator,
    condition_is,
    conditions,
    events,
    get,
    operator,
    operator_kubeconfig,
    queue,
    secret,
    wait_ready,
)
from tests.support.postgres_server import postgres_server
from tests.support.waiting import wait_until

__all__ = [
    "clusterwide_operator",
    "operator",
    "operator_kubeconfig",
]  # fixtures, imported for use

# The first test may build the control plane (minutes on a cold machine); later runs start it in
# seconds from the user's cache folder.
pytestmark = pytest.mark.timeout(600)

T = TypeVar("T")
POLL = 0.25
"""Between kubectl calls while waiting: each is a process, and this machine has two cores."""


def wait(check: Callable[[], T | None], timeout: float = 30.0) -> T:
    value = wait_until(check, timeout=timeout, interval=POLL)
    assert value is not None
    return value


def status_of(kube: ControlPlane, name: str, namespace: str) -> dict[str, Any]:
    found = get(kube, "queue", name, namespace)
    assert found is not None, f"queue {namespace}/{name} is gone"
    return dict(found.get("status") or {})


def replicas_of(kube: ControlPlane, name: str, namespace: str) -> int | None:
    deployment = get(kube, "deployment", f"{name}-workers", namespace)
    return None if deployment is None else deployment["spec"].get("replicas")


def scaled_events(kube: ControlPlane, namespace: str, name: str) -> list[str]:
    return [e["message"] for e in events(kube, namespace, name) if e["reason"] == "Scaled"]


def ticks(operator: Operator, name: str) -> int:
    """How many times the operator's timer has observed a Queue (from its log)."""
    return operator.log().count(f"[{operator.namespace}/{name}] Timer 'observe' succeeded")


def wait_ticks(operator: Operator, name: str, count: int) -> None:
    """Let the timer observe a Queue `count` more times: to show that something does *not*
    happen, wait for the chances it had, not for a guessed time."""
    start = ticks(operator, name)
    wait(lambda: ticks(operator, name) >= start + count, timeout=count * 5 + 10)


def table_names(url: str) -> list[str]:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        return sorted(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def messages(count: int, **fields: Any) -> list[NewMessage]:
    return [NewMessage(message={"n": n}, **fields) for n in range(count)]


def warnings(kube: ControlPlane, namespace: str, name: str) -> list[dict[str, Any]]:
    return [e for e in events(kube, namespace, name) if e["type"] == "Warning"]


def table_rows(text: str) -> list[dict[str, str]]:
    """kubectl's table output, by column (cells may be blank)."""
    header, *lines = text.splitlines()
    starts = [match.start() for match in re.finditer(r"\S+", header)]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    return [{header[a:b].strip(): line[a:b].strip() for a, b in bounds} for line in lines if line]


def patch(kube: ControlPlane, name: str, namespace: str, spec: dict[str, Any]) -> None:
    kube.kubectl(
        "patch", "queue", name, "-n", namespace, "--type=merge", "-p", json.dumps({"spec": spec})
    )


# --- 1. create ----------------------------------------------------------------------------------


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

    # Something in every printer column: 3 Pending, 1 Leased, 1 Error (maxAttempts 1).
    with connect(postgres_url) as db:
        orders = db.queue("orders")
        orders.enqueue_many(messages(5))
        leased = orders.lease("test", 2).messages
        orders.fail("test", [Failure(leased[0], "boom")])

    def listed() -> dict[str, str] | None:
        [row] = table_rows(kube.kubectl("get", "tq", "-n", namespace).stdout)
        return row if row["PENDING"] == "3" and row["REPLICAS"] == "1" else None

    row = wait(listed)
    assert list(row) == [
        "NAME",
        "PENDING",
        "LEASED",
        "ERRORS",
        "REPLICAS",
        "HEALTH",
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
    }
    assert all(c["lastTransitionTime"] and c["message"] for c in found.values())
    assert found["DatabaseReachable"]["message"] == postgres_url  # (it has no password)

    posted = {(e["type"], e["reason"], e["message"]) for e in events(kube, namespace, "orders")}
    assert ("Normal", "Table", "table orders created") in posted
    assert ("Normal", "Workers", "created Deployment orders-workers") in posted
    assert any(e[:2] == ("Normal", "Scaled") and e[2].startswith("workers 0 -> 1") for e in posted)


# --- 2. Operator-mode scaling -------------------------------------------------------------------


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
        wait(lambda: replicas_of(kube, "jobs", namespace) == 0, timeout=20)
    finally:
        db.close()
    assert scaled_events(kube, namespace, "jobs") == [
        "workers 0 -> 5 (backlog 1000, leased 0)",
        "workers 5 -> 1 (backlog 0, leased 50)",
        "workers 1 -> 0 (backlog 0, leased 0)",
    ]
    assert status_of(kube, "jobs", namespace)["backlog"] == 0


# --- 3. default status, HPA mode ----------------------------------------------------------------


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

        # A backlog that would mean 3 replicas: in HPA mode the operator leaves them alone (and
        # the HPA controller leaves a Deployment at 0 replicas alone too).
        scaled_before = scaled_events(kube, namespace, "mail")
        assert mail.set_status("Pending", from_status="Paused") == 300
        wait(lambda: status_of(kube, "mail", namespace).get("backlog") == 300)
        wait_ticks(operator, "mail", 3)
        assert replicas_of(kube, "mail", namespace) == 0
        assert scaled_events(kube, namespace, "mail") == scaled_before

        patch(kube, "mail", namespace, {"workers": {"autoscaling": {"mode": "Operator"}}})
        wait(lambda: get(kube, "hpa", "mail-workers", namespace) is None)
        wait(lambda: replicas_of(kube, "mail", namespace) == 3)
    finally:
        db.close()
    reasons = [e["reason"] for e in events(kube, namespace, "mail")]
    assert reasons.count("Autoscaling") == 2  # created, then deleted the HPA
    assert not warnings(kube, namespace, "mail")


# --- 4. bad specs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"onLeaseExpired": "Explode"}, 'spec.onLeaseExpired: Unsupported value: "Explode"'),
        ({"leaseSeconds": -5}, "spec.leaseSeconds: Invalid value: -5"),
        (
            {"workers": {"handler": {"grpc": {}}}},
            'ValidationError(Queue.spec.workers.handler): unknown field "grpc"',
        ),
        ({"table": "x; drop"}, 'spec.table: Invalid value: "x; drop"'),
        (
            {"workers": {"handler": {"http": {}, "python": "shop.jobs:send"}}},
            "spec.workers.handler: Invalid value: give exactly one of http or python",
        ),
        (
            {"workers": {"autoscaling": {"minReplicas": 6, "maxReplicas": 5}}},
            "spec.workers.autoscaling: Invalid value: minReplicas must be <= maxReplicas",
        ),
    ],
    ids=["enum", "negative", "unknown-handler", "table-name", "two-handlers", "min-over-max"],
)
def test_the_schema_rejects_a_bad_spec_naming_the_field(
    kube: ControlPlane, spec: dict[str, Any], expected: str
) -> None:
    result = apply(kube, queue("bad", "default", **spec), check=False)
    assert result.returncode != 0
    assert expected in result.stderr, result.stderr
    assert get(kube, "queue", "bad", "default") is None


def test_what_the_schema_cannot_catch_is_ready_false_with_a_warning_and_no_crash(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("first", namespace, table="shared"),
    )
    wait_ready(kube, "first", namespace)
    apply(
        kube,
        queue("reserved", namespace, table="tablequeue_reserved"),  # a prefix the schema allows
        queue("second", namespace, table="shared"),  # a table that belongs to "first"
        queue("fine", namespace),
    )
    reserved = wait(condition_is(kube, "reserved", namespace, "Ready", "False", "InvalidSpec"))
    message = conditions(reserved)["Ready"]["message"]
    assert "spec.table" in message and "the prefix 'tablequeue_' is reserved" in message, message
    second = wait(condition_is(kube, "second", namespace, "TableReady", "False", "Conflict"))
    assert conditions(second)["Ready"]["status"] == "False"
    assert conditions(second)["Ready"]["reason"] == "Conflict"
    assert (
        "table 'shared' already belongs to queue 'first'" in conditions(second)["Ready"]["message"]
    )

    def warned(name: str, reason: str) -> bool:
        return any(e["reason"] == reason for e in warnings(kube, namespace, name))

    wait(lambda: warned("reserved", "InvalidSpec") and warned("second", "Conflict"))
    # The operator lives on and serves the other Queues.
    wait_ready(kube, "fine", namespace)
    with connect(postgres_url) as db:
        db.queue("first").enqueue({"still": "observed"})
    wait(lambda: status_of(kube, "first", namespace).get("counts") == {"Pending": 1})
    assert operator.alive and operator.liveness()[0] == 200
    assert table_names(postgres_url) == ["fine", "shared", "tablequeue_queues"]
    assert get(kube, "deployment", "reserved-workers", namespace) is None
    assert get(kube, "deployment", "second-workers", namespace) is None

    # Fixing the spec heals it.
    patch(kube, "reserved", namespace, {"table": "reserved_ok"})
    wait_ready(kube, "reserved", namespace)


# --- 5. database and Secret trouble -------------------------------------------------------------


def test_an_unreachable_database_and_a_missing_secret_heal_by_themselves(
    kube: ControlPlane, namespace: str, operator: Operator
) -> None:
    with postgres_server() as server:
        url = server.create_database("dedicated")
        apply(kube, secret("db", namespace, url), queue("fragile", namespace))
        wait_ready(kube, "fragile", namespace)

        server.stop()
        down = wait(
            condition_is(
                kube, "fragile", namespace, "DatabaseReachable", "False", "DatabaseUnavailable"
            ),
            timeout=15,
        )
        assert conditions(down)["Ready"]["status"] == "False"
        assert conditions(down)["Ready"]["reason"] == "DatabaseUnavailable"
        assert f"127.0.0.1:{server.port}" in conditions(down)["DatabaseReachable"]["message"]

        wait_ticks(operator, "fragile", 2)
        server.start()  # same data folder, same port
        up = wait(condition_is(kube, "fragile", namespace, "Ready", "True"), timeout=15)
        assert conditions(up)["DatabaseReachable"]["reason"] == "Connected"
        with connect(url) as db:
            db.queue("fragile").enqueue({"after": "restart"})
        wait(lambda: status_of(kube, "fragile", namespace).get("counts") == {"Pending": 1})

        apply(kube, queue("orphan", namespace, "not-yet"))
        missing = wait(
            condition_is(kube, "orphan", namespace, "DatabaseReachable", "False", "SecretNotFound")
        )
        assert "'not-yet' not found" in conditions(missing)["DatabaseReachable"]["message"]
        assert conditions(missing)["Ready"]["status"] == "False"
        apply(kube, secret("not-yet", namespace, url))
        healed = wait(condition_is(kube, "orphan", namespace, "Ready", "True"), timeout=40)
        assert conditions(healed)["DatabaseReachable"]["reason"] == "Connected"
        assert "orphan" in table_names(url)
        assert operator.alive
        # One Warning Event when the database went away, not one per tick.
        fragile = [e["reason"] for e in warnings(kube, namespace, "fragile")]
        assert fragile == ["DatabaseUnavailable"]
        assert "SecretNotFound" in {e["reason"] for e in warnings(kube, namespace, "orphan")}


# --- 6. deletion --------------------------------------------------------------------------------


def test_deletion_honours_the_deletion_policy_and_collects_the_deployment(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("kept", namespace, deletionPolicy="Retain"),
        queue("dropped", namespace, deletionPolicy="Delete"),
    )
    for name in ("kept", "dropped"):
        wait_ready(kube, name, namespace)
        assert get(kube, "deployment", f"{name}-workers", namespace) is not None
    with connect(postgres_url) as db:
        db.queue("kept").enqueue({"keep": "me"})
    # A Queue whose Secret never existed must not block its own deletion.
    apply(kube, queue("typo", namespace, "no-such-secret", deletionPolicy="Delete"))
    wait(condition_is(kube, "typo", namespace, "DatabaseReachable", "False", "SecretNotFound"))

    kube.kubectl("delete", "queue", "kept", "dropped", "typo", "-n", namespace, "--timeout=30s")
    for name in ("kept", "dropped", "typo"):
        assert get(kube, "queue", name, namespace) is None  # the finalizer was removed

    def collected() -> bool:
        deployments = kube.kubectl_json("get", "deployments", "-n", namespace)["items"]
        return not deployments  # the garbage collector followed the owner references

    wait(collected)
    assert table_names(postgres_url) == ["kept", "tablequeue_queues"]
    with connect(postgres_url) as db:
        assert [q["name"] for q in db.queues()] == ["kept"]
        assert db.queue("kept").stats().counts == {"Pending": 1}
    posted = {(e["reason"], e["message"]) for e in events(kube, namespace)}
    assert ("Retained", "table kept kept (deletionPolicy Retain)") in posted
    assert ("Deleted", "table dropped dropped") in posted
    assert (
        "TableKept",
        "table typo kept: cannot reach its database (secret 'no-such-secret' not found)",
    ) in posted


def test_deleting_the_namespace_drops_the_table_though_the_secret_goes_first(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("ephemeral", namespace, deletionPolicy="Delete"),
    )
    wait_ready(kube, "ephemeral", namespace)
    kube.kubectl("delete", "namespace", namespace, "--wait=false")
    wait(lambda: get(kube, "namespace", namespace, "default") is None, timeout=60)
    assert table_names(postgres_url) == ["tablequeue_queues"]


# --- 7. restart ---------------------------------------------------------------------------------


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
    assert table_names(postgres_url) == ["before", "during", "tablequeue_queues"]
    deployments = kube.kubectl_json("get", "deployments", "-n", namespace)["items"]
    assert sorted(d["metadata"]["name"] for d in deployments) == [
        "before-workers",
        "during-workers",
    ]
    replicasets = kube.kubectl_json("get", "replicasets", "-n", namespace)["items"]
    assert len(replicasets) == 2  # the restart did not change the Pod template
    posted = [(e["reason"], e["message"]) for e in events(kube, namespace)]
    for name in ("before", "during"):
        assert posted.count(("Workers", f"created Deployment {name}-workers")) == 1
        assert posted.count(("Table", f"table {name} created")) <= 1
    assert not [e for e in events(kube, namespace) if e["type"] == "Warning"]
    assert "Traceback" not in operator.log()


# --- 8. many Queues -----------------------------------------------------------------------------


def test_fifty_queues_applied_at_once_all_become_ready(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    names = [f"q{n:02d}" for n in range(50)]
    apply(kube, secret("db", namespace, postgres_url), *(queue(n, namespace) for n in names))

    def ready() -> list[str]:
        items = kube.kubectl_json("get", "queues", "-n", namespace)["items"]
        done = [
            q["metadata"]["name"]
            for q in items
            if conditions(q).get("Ready", {}).get("status") == "True"
        ]
        return done if len(done) == len(names) else []

    assert sorted(wait(ready, timeout=120)) == names
    assert table_names(postgres_url) == sorted([*names, "tablequeue_queues"])
    deployments = kube.kubectl_json("get", "deployments", "-n", namespace)["items"]
    assert len(deployments) == 50
    assert operator.alive


# --- 9. the worker sidecar, run as the Deployment says ------------------------------------------


def _container_environment(
    kube: ControlPlane, namespace: str, container: dict[str, Any]
) -> dict[str, str]:
    """The container's env as the kubelet would set it (values and secretKeyRefs only)."""
    env: dict[str, str] = {}
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
            continue
        ref = item["valueFrom"]["secretKeyRef"]
        data = kube.kubectl_json("get", "secret", ref["name"], "-n", namespace)["data"]
        env[item["name"]] = base64.b64decode(data[ref["key"]]).decode()
    return env


def test_the_worker_sidecar_runs_as_the_deployment_describes_it(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str, tmp_path: Path
) -> None:
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue(
            "sidecar",
            namespace,
            keepProcessedFor="forever",
            workers={
                "handler": {"python": "tablequeue.examples:noop"},
                "pollInterval": {"minSeconds": 0.05, "maxSeconds": 0.5},
            },
        ),
    )
    wait_ready(kube, "sidecar", namespace)
    deployment = get(kube, "deployment", "sidecar-workers", namespace)
    assert deployment is not None
    [container] = [
        c
        for c in deployment["spec"]["template"]["spec"]["containers"]
        if c["name"] == "tablequeue-worker"
    ]
    command = container["command"]
    assert command[0] == "tablequeue"
    command = [sys.executable, "-m", "tablequeue", *command[1:], *container.get("args", [])]
    env = _container_environment(kube, namespace, container)
    assert env["TABLEQUEUE_DB"] == postgres_url
    # A Pod has a network namespace of its own; here the port must be one that is free.
    [port] = container["ports"]
    assert env["TABLEQUEUE_PORT"] == str(port["containerPort"])
    env["TABLEQUEUE_PORT"] = str(free_port())
    base = {k: v for k, v in os.environ.items() if not k.startswith("TABLEQUEUE_")}

    with connect(postgres_url) as db:
        db.queue("sidecar").enqueue_many(messages(40))
    log = tmp_path / "worker.log"
    with log.open("wb") as output:
        worker = subprocess.Popen(
            command,
            env=base | env,
            cwd=tmp_path,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        probe = container["readinessProbe"]["httpGet"]["path"]
        url = f"http://127.0.0.1:{env['TABLEQUEUE_PORT']}{probe}"

        def ready() -> bool:
            assert worker.poll() is None, log.read_text()
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    return int(response.status) == 200
            except OSError:
                return False

        wait(ready)
        wait(lambda: status_of(kube, "sidecar", namespace).get("counts") == {"Processed": 40})
        with connect(postgres_url) as db:
            sidecar = db.queue("sidecar")
            sidecar.enqueue_many(messages(10, status="Pending"))
            wait(lambda: sidecar.stats().counts == {"Processed": 50})
    finally:
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(timeout=30)
    assert code == 0, log.read_text()


# --- 10. metrics and liveness -------------------------------------------------------------------


def sample(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and labels.items() <= found.labels.items():
                return float(found.value)
    return None


def test_metrics_match_the_database_and_liveness_answers(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    apply(kube, secret("db", namespace, postgres_url), queue("metered", namespace))
    wait_ready(kube, "metered", namespace)
    labels = {"namespace": namespace, "queue": "metered"}
    db: Database = connect(postgres_url)
    try:
        metered = db.queue("metered")
        metered.enqueue_many([*messages(7), *messages(2, status="OnHold")])
        stats = metered.stats()
        assert (stats.counts, stats.backlog) == ({"Pending": 7, "OnHold": 2}, 7)

        def exported() -> str | None:
            text = operator.metrics()
            return text if sample(text, "tablequeue_backlog", **labels) == 7 else None

        text = wait(exported)
        assert sample(text, "tablequeue_messages", status="Pending", **labels) == 7
        assert sample(text, "tablequeue_messages", status="OnHold", **labels) == 2
        assert sample(text, "tablequeue_queue_healthy", **labels) == 1
        assert sample(text, "tablequeue_oldest_pending_age_seconds", **labels) is not None
        wait(
            lambda: (
                sample(operator.metrics(), "tablequeue_operator_desired_replicas", **labels) == 1
            )
        )

        # A status whose rows are gone reads 0, not its last count.
        metered.purge(statuses=["Pending"])
        wait(lambda: sample(operator.metrics(), "tablequeue_backlog", **labels) == 0)
        text = operator.metrics()
        assert sample(text, "tablequeue_messages", status="Pending", **labels) == 0
        assert sample(text, "tablequeue_messages", status="OnHold", **labels) == 2
    finally:
        db.close()

    status, body = operator.liveness()
    assert status == 200, body

    # A deleted Queue leaves no series behind.
    kube.kubectl("delete", "queue", "metered", "-n", namespace, "--timeout=30s")
    wait(lambda: sample(operator.metrics(), "tablequeue_backlog", **labels) is None)
    gauges = "messages|backlog|oldest_pending_age_seconds|queue_healthy|operator_desired_replicas"
    assert not re.search(rf'tablequeue_({gauges})\{{[^}}]*queue="metered"', operator.metrics())
