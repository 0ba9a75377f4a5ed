"""`spec.archive` against a real control plane: the operator creates the Queue's archive CronJob
(owned by the Queue, accepted by the API server as built), replaces it when the spec changes,
deletes it when the field goes, and reports a CronJob the API server refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.operator.conftest import patch, status_of, wait
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import (
    Operator,
    apply,
    condition_is,
    conditions,
    events,
    get,
    queue,
    secret,
    wait_ready,
)

pytestmark = pytest.mark.timeout(600)

ARCHIVE = {"schedule": "0 3 1 1 *", "destination": {"url": "s3a://bucket/archive"}}
"""Once a year: the controller manager starts no Job during the test."""


def cronjob(kube: ControlPlane, namespace: str) -> dict[str, Any] | None:
    return get(kube, "cronjob", "orders-archive", namespace)


def test_the_operator_keeps_the_archive_cronjob_of_a_queue(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    apply(kube, secret("orders-db", namespace, postgres_url))
    apply(kube, queue("orders", namespace, "orders-db", archive=ARCHIVE))
    resource = wait_ready(kube, "orders", namespace)

    found = wait(lambda: cronjob(kube, namespace))
    [owner] = found["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "Queue",
        "orders",
        resource["metadata"]["uid"],
    )
    spec = found["spec"]
    assert (spec["schedule"], spec["timeZone"], spec["concurrencyPolicy"]) == (
        "0 3 1 1 *",
        "UTC",
        "Forbid",
    )
    [container] = spec["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "tablequeue/pipeline:0.1.0"  # the operator's default
    assert container["args"][3:9] == [
        "archive",
        "orders",
        "--to",
        "s3a://bucket/archive",
        "--older-than",
        "7d",
    ]
    assert container["env"] == [
        {
            "name": "TABLEQUEUE_DB",
            "valueFrom": {"secretKeyRef": {"name": "orders-db", "key": "url"}},
        }
    ]
    assert "postgresql" not in json.dumps(found)  # the URL stays in the Secret
    scheduled = conditions({"status": status_of(kube, "orders", namespace)})["ArchiveScheduled"]
    assert (scheduled["status"], scheduled["reason"]) == ("True", "Scheduled")
    assert scheduled["message"] == "CronJob orders-archive archives on 0 3 1 1 * (UTC)"

    # A change of spec.archive replaces the CronJob.
    patch(kube, "orders", namespace, {"archive": ARCHIVE | {"olderThan": "30d", "suspend": True}})

    def updated() -> dict[str, Any] | None:
        found = cronjob(kube, namespace)
        return found if found and found["spec"]["suspend"] else None

    found = wait(updated)
    [container] = found["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["args"][7:9] == ["--older-than", "30d"]

    # Without spec.archive, no CronJob.
    kube.kubectl(
        "patch", "queue", "orders", "-n", namespace, "--type=json",
        "-p", json.dumps([{"op": "remove", "path": "/spec/archive"}]),
    )  # fmt: skip
    wait(lambda: cronjob(kube, namespace) is None or None)
    wait(condition_is(kube, "orders", namespace, "ArchiveScheduled", "False", "NotConfigured"))
    wait_ready(kube, "orders", namespace)
    posted = {(e["reason"], e["message"]) for e in events(kube, namespace, "orders")}
    assert {
        ("Archive", "created CronJob orders-archive"),
        ("Archive", "deleted CronJob orders-archive"),
    } <= posted


def test_a_cronjob_the_api_server_refuses_keeps_the_queue_from_ready(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    refused = ARCHIVE | {"resources": {"requests": {"cpu": "lots"}}}
    apply(kube, secret("orders-db", namespace, postgres_url))
    apply(kube, queue("orders", namespace, "orders-db", archive=refused))
    found = wait(condition_is(kube, "orders", namespace, "ArchiveScheduled", "False"))
    archive = conditions(found)["ArchiveScheduled"]
    assert archive["reason"] == "ArchiveRefused"
    assert archive["message"].startswith(
        "the API server refused the archive CronJob orders-archive: "
    )
    assert "quantities must match" in archive["message"]  # the API server names the problem
    assert conditions(found)["Ready"]["reason"] == "ArchiveRefused"
    assert cronjob(kube, namespace) is None

    # Fixed (null removes the field from the merge patch): in place, Ready again.
    patch(kube, "orders", namespace, {"archive": ARCHIVE | {"resources": None}})
    wait(condition_is(kube, "orders", namespace, "ArchiveScheduled", "True", "Scheduled"))
    wait_ready(kube, "orders", namespace)
    assert cronjob(kube, namespace) is not None
