"""KEDA mode's objects as pure functions of a Queue, and its load query run on real PostgreSQL:
an empty queue reads 0, due and leased messages count, messages not yet due and held ones not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from tablequeue import NewMessage, connect
from tablequeue.operator import keda
from tablequeue.spec import QueueResource, QueueSpec

OWNER = {"apiVersion": "tablequeue.dev/v1", "kind": "Queue", "name": "orders", "uid": "u-1"}


def keda_spec(**autoscaling: object) -> QueueSpec:
    return QueueResource.from_name(
        "orders",
        database={"secret_ref": {"name": "orders-db", "key": "dsn"}},
        table="shop_orders",
        workers={"autoscaling": {"mode": "KEDA", **autoscaling}},
    ).spec


def test_scaled_object_scales_the_workers_on_the_load_query() -> None:
    queue = keda_spec(min_replicas=0, max_replicas=6, messages_per_replica=25, cooldown_seconds=30)
    body = keda.scaled_object("orders", "shop", queue, OWNER, polling_seconds=2.5)
    assert body["apiVersion"] == "keda.sh/v1alpha1" and body["kind"] == "ScaledObject"
    assert body["metadata"]["name"] == "orders-workers"
    assert body["metadata"]["ownerReferences"] == [OWNER]
    assert body["metadata"]["labels"]["tablequeue.dev/queue"] == "orders"
    scaled = body["spec"]
    assert scaled["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "orders-workers",
    }
    assert (scaled["minReplicaCount"], scaled["maxReplicaCount"]) == (0, 6)  # scale to zero
    assert (scaled["pollingInterval"], scaled["cooldownPeriod"]) == (3, 30)
    behavior = scaled["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior == {"scaleDown": {"stabilizationWindowSeconds": 30}}
    [trigger] = scaled["triggers"]
    assert trigger["type"] == "postgresql"
    assert trigger["authenticationRef"] == {"name": "orders-workers"}
    assert trigger["metadata"] == {
        "query": keda.load_query("shop_orders"),
        "targetQueryValue": "25",
        "activationTargetQueryValue": "0",  # any load wakes a queue at zero
    }


def test_trigger_authentication_names_the_queues_own_secret() -> None:
    body = keda.trigger_authentication("orders", "shop", keda_spec(), OWNER)
    assert (body["kind"], body["metadata"]["name"]) == ("TriggerAuthentication", "orders-workers")
    assert body["spec"] == {
        "secretTargetRef": [{"parameter": "connection", "name": "orders-db", "key": "dsn"}]
    }


def test_load_query_quotes_the_table_and_binds_nothing() -> None:
    assert keda.load_query("shop_orders") == (
        "SELECT count(*) AS count_1 FROM shop_orders WHERE shop_orders.status IN "
        "('Pending', 'Sleeping') AND shop_orders.process_after <= now() "
        "OR shop_orders.status = 'Leased'"
    )
    assert 'FROM "user"' in keda.load_query("user")  # a reserved word


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("postgresql://app:pw@db:5432/app?sslmode=require", None),
        ("postgres://app@db/app", None),
        ("postgresql+psycopg://app@db/app", "write it as postgresql://..., not postgresql+psycopg"),
        ("sqlite:///queue.db", "KEDA mode needs a PostgreSQL database"),
        ("not a url", "not a URL"),
    ],
)
def test_connection_problem(url: str, problem: str | None) -> None:
    found = keda.connection_problem(url)
    assert found == problem if problem is None else problem in (found or "")


def test_load_query_on_real_postgresql(postgres_url: str) -> None:
    with connect(postgres_url) as db:
        db.apply(QueueResource.from_name("orders", table="shop_orders"))
        engine = sa.create_engine(postgres_url.replace("postgresql://", "postgresql+psycopg://"))

        def load() -> object:
            with engine.connect() as connection:
                return connection.execute(sa.text(keda.load_query("shop_orders"))).scalar_one()

        try:
            assert load() == 0  # empty: 0, not NULL
            orders = db.queue("orders")
            later = datetime.now(UTC) + timedelta(hours=1)
            orders.enqueue_many(
                [NewMessage(message={"n": n}) for n in range(5)]
                + [NewMessage(message={"later": True}, at=later)]
                + [NewMessage(message={"held": True}, status="OnHold")]
            )
            assert load() == 5  # not the one due later, not the held one
            assert len(orders.lease("w", 2).messages) == 2
            assert load() == 5  # 3 due + 2 leased: work in hand keeps its workers
        finally:
            engine.dispose()
