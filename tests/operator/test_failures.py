"""Trouble never crashes the operator: bad specs (rejected by the schema, or Ready=False with a
Warning), an unreachable database and a missing Secret, which heal by themselves."""

from __future__ import annotations

from typing import Any

import pytest

from tablequeue import connect
from tests.operator.conftest import (
    SHARED_TABLES,
    patch,
    status_of,
    table_names,
    wait,
    wait_ticks,
    warnings,
)
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import (
    Operator,
    apply,
    condition_is,
    conditions,
    get,
    queue,
    secret,
    wait_ready,
)
from tests.support.postgres_server import postgres_server

# The first test may build the control plane (minutes on a cold machine); later runs start it in
# seconds from the user's cache folder.
pytestmark = pytest.mark.timeout(600)


# --- bad specs ------------------------------------------------------------------------------------


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
        (
            {"workers": {"autoscaling": {"maxReplicas": 2147483647}}},
            "spec.workers.autoscaling.maxReplicas: Invalid value: 2147483647",
        ),
    ],
    ids=[
        "enum",
        "negative",
        "unknown-handler",
        "table-name",
        "two-handlers",
        "min-over-max",
        "replicas-bound",
    ],
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
    assert table_names(postgres_url) == sorted(["fine", "shared", *SHARED_TABLES])
    assert get(kube, "deployment", "reserved-workers", namespace) is None
    assert get(kube, "deployment", "second-workers", namespace) is None

    # Fixing the spec heals it.
    patch(kube, "reserved", namespace, {"table": "reserved_ok"})
    wait_ready(kube, "reserved", namespace)


# --- database and Secret trouble ------------------------------------------------------------------


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
            timeout=60,
        )
        assert conditions(down)["Ready"]["status"] == "False"
        assert conditions(down)["Ready"]["reason"] == "DatabaseUnavailable"
        assert f"127.0.0.1:{server.port}" in conditions(down)["DatabaseReachable"]["message"]

        wait_ticks(operator, "fragile", 2)
        server.start()  # same data folder, same port
        up = wait(condition_is(kube, "fragile", namespace, "Ready", "True"), timeout=60)
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
