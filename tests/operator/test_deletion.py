"""Deleting a Queue honours its deletionPolicy, through the finalizer, even when its namespace
(and so its Secret) goes away with it."""

from __future__ import annotations

import pytest

from tablequeue import connect
from tests.operator.conftest import (
    SHARED_TABLES,
    table_names,
    wait,
)
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

# The first test may build the control plane (minutes on a cold machine); later runs start it in
# seconds from the user's cache folder.
pytestmark = pytest.mark.timeout(600)


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
    assert table_names(postgres_url) == sorted(["kept", *SHARED_TABLES])
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
    assert table_names(postgres_url) == SHARED_TABLES
