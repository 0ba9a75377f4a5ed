"""The operator's pure parts, without a cluster: objects built from a Queue, scaling, conditions,
and the CRD generated from the pydantic spec (committed file and generator must agree)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, cast

import kopf
import pytest
import yaml

from tablequeue.operator import builders
from tablequeue.operator.conditions import (
    condition,
    merge,
    reconcile_refused_workers,
    written,
)
from tablequeue.operator.crd import custom_resource_definition, render
from tablequeue.spec import QueueResource, QueueSpec

ROOT = Path(__file__).resolve().parents[2]
OWNER = {"apiVersion": "tablequeue.dev/v1", "kind": "Queue", "name": "orders", "uid": "u-1"}


def spec(**fields: Any) -> QueueSpec:
    base: dict[str, Any] = {"database": {"secret_ref": {"name": "orders-db"}}}
    return QueueResource.from_name("orders", **(base | fields)).spec


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_deployment_adds_the_worker_sidecar_to_the_users_template() -> None:
    template: dict[str, Any] = {
        "metadata": {"labels": {"team": "shop"}},
        "spec": {"containers": [{"name": "app", "image": "shop/app:1"}]},
    }
    queue = spec(
        workers={
            "handler": {"http": {"port": 8081, "path": "/jobs", "timeout_seconds": 12}},
            "template": template,
            "batch_size": 20,
            "concurrency": 8,
            "grace_period_seconds": 40,
        }
    )
    body = builders.deployment("orders", "shop", queue, OWNER, "tq/worker:1", replicas=3)
    assert body["metadata"]["ownerReferences"] == [OWNER]
    assert body["spec"]["replicas"] == 3
    assert body["spec"]["selector"] == {"matchLabels": {"tablequeue.dev/queue": "orders"}}
    pod = body["spec"]["template"]
    assert pod["metadata"]["labels"]["team"] == "shop"
    assert pod["metadata"]["labels"]["tablequeue.dev/queue"] == "orders"
    app, worker = pod["spec"]["containers"]
    assert app == {"name": "app", "image": "shop/app:1", "lifecycle": {"preStop": DRAINED_HOOK}}
    assert worker["name"] == "tablequeue-worker" and worker["image"] == "tq/worker:1"
    assert worker["command"] == ["tablequeue", "worker"]
    env = env_of(worker)
    assert env["TABLEQUEUE_DB"] == {"secretKeyRef": {"name": "orders-db", "key": "url"}}
    assert env["TABLEQUEUE_QUEUE"] == "orders"
    assert env["TABLEQUEUE_HANDLER"] == "http://127.0.0.1:8081/jobs"
    assert env["TABLEQUEUE_HANDLER_TIMEOUT"] == "12.0"
    assert (env["TABLEQUEUE_BATCH_SIZE"], env["TABLEQUEUE_CONCURRENCY"]) == ("20", "8")
    assert env["TABLEQUEUE_APP_READINESS_PATH"] == "/"  # the app's readiness, by default on /
    assert worker["readinessProbe"]["httpGet"]["path"] == "/readyz"
    # Liveness waits for a start slowed by a loaded node: two minutes of startup probes first.
    startup = worker["startupProbe"]
    assert startup["httpGet"]["path"] == "/livez"
    assert startup["periodSeconds"] * startup["failureThreshold"] == 120
    assert env["TABLEQUEUE_GRACE_PERIOD"] == "40.0"  # set: kept (above the timeout, 12)
    assert pod["spec"]["terminationGracePeriodSeconds"] == 50  # 40 + 10
    assert template["spec"]["containers"] == [{"name": "app", "image": "shop/app:1"}]  # untouched


DRAINED_HOOK = {"httpGet": {"path": "/drained", "port": 9090}}


def test_app_containers_wait_for_the_worker_to_drain_unless_they_have_their_own_pre_stop() -> None:
    own = {"exec": {"command": ["/bin/flush"]}}
    template: dict[str, Any] = {
        "spec": {
            "containers": [
                {"name": "app", "image": "shop/app:1", "lifecycle": {"postStart": own}},
                {"name": "proxy", "image": "sql/proxy:2"},
                {"name": "flusher", "image": "shop/flush:1", "lifecycle": {"preStop": own}},
            ],
            "initContainers": [{"name": "migrate", "image": "shop/app:1"}],
        }
    }
    pod = builders.pod_template("orders", spec(workers={"template": template}), "tq/worker:1")
    app, proxy, flusher, worker = pod["spec"]["containers"]
    # By number: a named port in a hook would be looked up in the app's own container.
    assert app["lifecycle"] == {"postStart": own, "preStop": DRAINED_HOOK}
    assert proxy["lifecycle"] == {"preStop": DRAINED_HOOK}
    assert flusher["lifecycle"] == {"preStop": own}  # its own hook is kept
    assert worker["name"] == "tablequeue-worker" and "lifecycle" not in worker
    assert env_of(worker)["TABLEQUEUE_PRESTOP_HOOKS"] == "2"  # it waits for app's and proxy's
    assert worker["ports"] == [
        {"name": "metrics", "containerPort": DRAINED_HOOK["httpGet"]["port"]}
    ]
    assert pod["spec"]["initContainers"] == [{"name": "migrate", "image": "shop/app:1"}]
    assert template["spec"]["containers"][1] == {"name": "proxy", "image": "sql/proxy:2"}


@pytest.mark.parametrize(
    ("workers", "worker_grace", "pod_grace"),
    [
        ({}, "30.0", 40),  # the defaults: HTTP timeout 30 s = default grace 30 s, + 10
        # The default grace follows the handlers' time limit: the HTTP timeout...
        ({"handler": {"http": {"timeout_seconds": 300}}}, "300.0", 310),
        # ... or executionTimeoutSeconds when it is shorter...
        (
            {"handler": {"http": {"timeout_seconds": 300}}, "execution_timeout_seconds": 90.5},
            "90.5",
            101,
        ),
        # ... the execution limit of a Python handler; never below the default 30 s...
        ({"handler": {"python": "shop.jobs:send"}, "execution_timeout_seconds": 600}, "600.0", 610),
        ({"handler": {"python": "shop.jobs:send"}, "execution_timeout_seconds": 5}, "30.0", 40),
        # ... and a Python handler without a limit keeps the default.
        ({"handler": {"python": "shop.jobs:send"}}, "30.0", 40),
        # A grace period the Queue sets is the worker's, shorter than the limit or not.
        ({"handler": {"http": {"timeout_seconds": 300}}, "grace_period_seconds": 60}, "60.0", 70),
        ({"grace_period_seconds": 0}, "0.0", 10),
        # The template's own larger grace is never lowered; a smaller one is raised.
        ({"template": {"spec": {"terminationGracePeriodSeconds": 3600}}}, "30.0", 3600),
        ({"template": {"spec": {"terminationGracePeriodSeconds": 5}}}, "30.0", 40),
    ],
)
def test_the_grace_periods_cover_the_handlers_time_limit(
    workers: dict[str, Any], worker_grace: str, pod_grace: int
) -> None:
    queue = spec(workers=workers)
    pod = builders.pod_template("orders", queue, "tq/worker:1")
    worker = pod["spec"]["containers"][-1]
    assert env_of(worker)["TABLEQUEUE_GRACE_PERIOD"] == worker_grace
    assert pod["spec"]["terminationGracePeriodSeconds"] == pod_grace
    assert pod_grace >= math.ceil(float(worker_grace)) + builders.SHUTDOWN_MARGIN_SECONDS


def test_python_handler_and_own_image() -> None:
    queue = spec(workers={"handler": {"python": "shop.jobs:send"}, "image": "shop/worker:2"})
    body = builders.deployment("orders", "shop", queue, OWNER, "tq/worker:1", replicas=None)
    assert "replicas" not in body["spec"]  # left to an HPA
    [worker] = body["spec"]["template"]["spec"]["containers"]
    assert worker["image"] == "shop/worker:2"
    assert env_of(worker)["TABLEQUEUE_HANDLER"] == "python:shop.jobs:send"
    assert "TABLEQUEUE_APP_READINESS_PATH" not in env_of(worker)  # no app to wait for


@pytest.mark.parametrize(("path", "variable"), [("/healthz", "/healthz"), (None, "off")])
def test_app_readiness_path_reaches_the_worker(path: str | None, variable: str) -> None:
    queue = spec(workers={"app_readiness_path": path})
    body = builders.deployment("orders", "shop", queue, OWNER, "tq/worker:1", replicas=1)
    [worker] = body["spec"]["template"]["spec"]["containers"]
    assert env_of(worker)["TABLEQUEUE_APP_READINESS_PATH"] == variable


def test_hpa_targets_the_backlog_metric_of_this_queue() -> None:
    queue = spec(
        workers={"autoscaling": {"mode": "HPA", "max_replicas": 7, "messages_per_replica": 50}}
    )
    hpa = builders.horizontal_pod_autoscaler("orders", "shop", queue, OWNER)
    assert hpa["spec"]["scaleTargetRef"]["name"] == "orders-workers"
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 7)
    [metric] = hpa["spec"]["metrics"]
    assert metric["external"]["metric"]["name"] == "tablequeue_backlog"
    assert metric["external"]["metric"]["selector"]["matchLabels"] == {
        "queue": "orders",
        "namespace": "shop",
    }
    assert metric["external"]["target"] == {"type": "AverageValue", "averageValue": "50"}


SCALING = {
    "min_replicas": 0,
    "max_replicas": 5,
    "messages_per_replica": 100,
    "cooldown_seconds": 60,
}


@pytest.mark.parametrize(
    ("backlog", "leased", "current", "last_busy", "now", "replicas"),
    [
        (1000, 0, 0, 0, 100, 5),  # clamped to max
        (250, 0, 0, 0, 100, 3),  # ceil
        (0, 0, 3, 90, 100, 3),  # within the cooldown: keep
        (0, 0, 3, 30, 100, 0),  # after the cooldown: down to min (zero)
        (0, 2, 3, 30, 100, 1),  # leased messages keep a worker
        (0, 250, 1, 0, 100, 3),  # in-flight work counts as load
        (150, 0, 4, 30, 100, 2),  # down, but not below the load
    ],
)
def test_operator_scaling(
    backlog: int, leased: int, current: int, last_busy: float, now: float, replicas: int
) -> None:
    queue = spec(workers={"autoscaling": SCALING})
    assert builders.scale(queue, backlog, leased, current, last_busy, now).replicas == replicas


def test_scaling_remembers_when_it_was_last_busy() -> None:
    queue = spec(workers={"autoscaling": SCALING})
    assert builders.scale(queue, 500, 0, 5, 0, 100).last_busy == 100
    assert builders.scale(queue, 0, 0, 5, 90, 100).last_busy == 90


def test_conditions_keep_transition_times_and_derive_ready() -> None:
    first = merge(None, [condition("TableReady", True, "TableReady")], 1)
    ready = next(c for c in first if c["type"] == "Ready")
    assert ready["status"] == "True"
    broken = merge(first, [condition("DatabaseReachable", False, "DatabaseUnavailable", "down")], 2)
    ready = next(c for c in broken if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "DatabaseUnavailable",
        "down",
    )
    table = next(c for c in broken if c["type"] == "TableReady")
    assert (
        table["lastTransitionTime"] == first[1]["lastTransitionTime"] or table["status"] == "True"
    )
    assert [c["type"] for c in broken] == ["Ready", "TableReady", "DatabaseReachable"]


def test_ready_needs_the_table_and_workers_nothing_refused() -> None:
    def ready(*updates: dict[str, Any]) -> tuple[str, str]:
        found = next(c for c in merge(None, list(updates), 1) if c["type"] == "Ready")
        return found["status"], found["reason"]

    table = condition("TableReady", True, "TableReady")
    # The timer may write before the first reconcile: no TableReady yet is not Ready.
    assert ready(condition("DatabaseReachable", True, "Connected")) == ("False", "Reconciling")
    assert ready(table, condition("WorkersReady", False, "WorkersStarting")) == (
        "True",
        "Reconciled",
    )
    refused = condition("WorkersReady", False, "WorkersRefused", "the API server refused ...")
    assert ready(table, refused) == ("False", "WorkersRefused")
    assert ready(refused) == ("False", "WorkersRefused")
    assert ready(table, condition("WorkersReady", False, "ScaleRefused")) == (
        "False",
        "ScaleRefused",
    )
    assert reconcile_refused_workers(merge(None, [table, refused], 1))
    assert not reconcile_refused_workers(
        merge(None, [table, condition("WorkersReady", False, "ScaleRefused")], 1)
    )


def raw(body: dict[str, Any]) -> kopf.RawBody:
    """A plain dict as the body kopf hands a patch function (a typed dict of the same keys)."""
    return cast(kopf.RawBody, body)


def test_conditions_are_written_into_the_freshest_body() -> None:
    table = condition("TableReady", True, "TableReady")
    refused = condition("WorkersReady", False, "WorkersRefused", "the API server refused ...")
    body: dict[str, Any] = {"status": {"counts": {"Pending": 1}}}
    written([table, refused], 1)(raw(body))
    assert body["status"]["counts"] == {"Pending": 1}

    def reasons() -> dict[str, str]:
        return {c["type"]: c["reason"] for c in body["status"]["conditions"]}

    # The timer's WorkersReady never replaces reconcile's refusal; reconcile's success does.
    starting = condition("WorkersReady", False, "WorkersStarting", "0 of 1 worker replicas ready")
    written([starting], 1, timer=True)(raw(body))
    assert reasons() == {
        "Ready": "WorkersRefused",
        "TableReady": "TableReady",
        "WorkersReady": "WorkersRefused",
    }
    written([table], 2, workers_applied=True)(raw(body))
    assert reasons() == {
        "Ready": "Reconciled",
        "TableReady": "TableReady",
        "WorkersReady": "WorkersStarting",
    }


def test_committed_crd_is_the_generated_one() -> None:
    committed = (ROOT / "crds" / "queue.yaml").read_text()
    assert committed == render(), "stale: run scripts/regenerate (it rewrites crds/queue.yaml)"


def test_crd_schema_mirrors_the_pydantic_spec() -> None:
    crd = custom_resource_definition()
    [version] = crd["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert set(schema["properties"]) == {
        field.alias or name for name, field in QueueSpec.model_fields.items()
    }
    assert schema["properties"]["onLeaseExpired"]["enum"] == ["Abandon", "Retry"]
    assert schema["properties"]["leaseSeconds"]["minimum"] == 1
    assert schema["properties"]["table"]["pattern"] == "^[a-z][a-z0-9_]{0,62}$"
    workers = schema["properties"]["workers"]["properties"]
    assert workers["autoscaling"]["properties"]["mode"]["enum"] == [
        "Operator",
        "HPA",
        "KEDA",
        "None",
    ]
    assert workers["handler"]["x-kubernetes-validations"][0]["rule"] == (
        "has(self.http) != has(self.python)"
    )
    text = yaml.safe_dump(crd)
    assert "$ref" not in text and "title" not in text and "'null'" not in text  # no null type
    app_readiness = workers["appReadinessPath"]
    assert (app_readiness["default"], app_readiness["nullable"]) == ("/", True)  # null kept
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Pending",
        "Leased",
        "Errors",
        "Replicas",
        "Health",
        "Paused",
        "Ready",
        "Age",
    ]
