"""Defects found from outside (issues 17 and 29), on a real API server: two Queues of one name in
two namespaces never share (or drop) one table, nor does the second show the first one's counts;
a spec.table that is not a queue table is Ready=False with a Warning, and a database that never
answers gets its condition without starving others, nor do 24 of them hold another tenant's
Queue."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tablequeue import connect
from tablequeue.operator.lanes import LANES_PER_NAMESPACE
from tests.operator.conftest import (
    SHARED_TABLES,
    messages,
    status_of,
    table_names,
    wait,
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
from tests.support.rogue_servers import SilentServer

pytestmark = pytest.mark.timeout(600)


def warned(kube: ControlPlane, namespace: str, name: str, reason: str) -> bool:
    return any(event["reason"] == reason for event in warnings(kube, namespace, name))


def test_a_queue_of_the_same_name_in_another_namespace_never_takes_or_drops_its_table(
    kube: ControlPlane, namespace: str, clusterwide_operator: Operator, postgres_url: str
) -> None:
    other = f"{namespace}-b"
    kube.kubectl("create", "namespace", other)
    try:
        apply(
            kube,
            secret("db", namespace, postgres_url),
            queue("orders", namespace, deletionPolicy="Delete"),
        )
        wait_ready(kube, "orders", namespace)
        with connect(postgres_url) as db:
            db.queue("orders").enqueue({"owner": "first"})
        apply(
            kube,
            secret("db", other, postgres_url),
            queue("orders", other, deletionPolicy="Delete"),
        )
        refused = wait(
            condition_is(kube, "orders", other, "Ready", "False", "QueueOwnedElsewhere"),
            timeout=60,
        )
        message = conditions(refused)["TableReady"]["message"]
        assert f"belongs to Queue {namespace}/orders" in message, message
        wait(lambda: warned(kube, other, "orders", "QueueOwnedElsewhere"))
        assert get(kube, "deployment", "orders-workers", other) is None

        kube.kubectl("delete", "queue", "orders", "-n", other, "--timeout=60s")
        assert get(kube, "queue", "orders", other) is None  # its finalizer let it go
        wait(lambda: warned(kube, other, "orders", "TableKept"))
        assert table_names(postgres_url) == sorted(["orders", *SHARED_TABLES])
        with connect(postgres_url) as db:
            assert db.queue("orders").stats().counts == {"Pending": 1}
        assert conditions(get(kube, "queue", "orders", namespace))["Ready"]["status"] == "True"

        kube.kubectl("delete", "queue", "orders", "-n", namespace, "--timeout=60s")
        assert table_names(postgres_url) == SHARED_TABLES  # its owner may drop it
    finally:
        kube.kubectl("delete", "namespace", other, "--wait=false", "--ignore-not-found")


def test_the_twin_in_another_namespace_never_shows_the_first_ones_counts_nor_ready(
    kube: ControlPlane, namespace: str, clusterwide_operator: Operator, postgres_url: str
) -> None:
    """Issue 29: the twin's timer read the queue of its name, another namespace's, before its
    reconcile refused it. Here its reconcile waits for the registry's lock (held by the test)
    while its timer runs three times: the moment that race needs, made certain."""
    other = f"{namespace}-b"
    kube.kubectl("create", "namespace", other)
    seen: list[dict[str, Any]] = []

    def timer_ran(times: int) -> Callable[[], bool]:
        line = f"[{other}/orders] Timer 'observe' succeeded"
        start = clusterwide_operator.log().count(line)

        def ran() -> bool:
            seen.append(dict((get(kube, "queue", "orders", other) or {}).get("status") or {}))
            return clusterwide_operator.log().count(line) >= start + times

        return ran

    try:
        apply(kube, secret("db", namespace, postgres_url), queue("orders", namespace))
        wait_ready(kube, "orders", namespace)
        with connect(postgres_url) as db:
            db.queue("orders").enqueue_many(messages(3))
            wait(lambda: status_of(kube, "orders", namespace).get("counts") == {"Pending": 3})
            with db.transaction() as connection:
                db.dialect.lock_for_ddl(connection, "registry")
                apply(kube, secret("db", other, postgres_url), queue("orders", other))
                wait(timer_ran(3))
        wait(condition_is(kube, "orders", other, "Ready", "False", "QueueOwnedElsewhere"))
        wait(timer_ran(3))
        statuses = [status for status in seen if status]
        assert statuses, "the twin got no status"
        for status in statuses:
            assert not set(status) & {"counts", "backlog", "health", "replicas"}, status
            ready = conditions({"status": status})["Ready"]
            assert (ready["status"], ready["reason"]) == ("False", "QueueOwnedElsewhere"), status
        assert get(kube, "deployment", "orders-workers", other) is None
        assert conditions(get(kube, "queue", "orders", namespace))["Ready"]["status"] == "True"
    finally:
        kube.kubectl("delete", "namespace", other, "--wait=false", "--ignore-not-found")


def test_a_table_that_is_not_a_queue_table_is_ready_false_with_a_warning(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    with connect(postgres_url) as db, db.transaction() as connection:
        connection.exec_driver_sql("CREATE TABLE users (id integer PRIMARY KEY, email text)")
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("signups", namespace, table="users"),
        queue("fine", namespace),
    )
    refused = wait(condition_is(kube, "signups", namespace, "Ready", "False", "NotAQueueTable"))
    message = conditions(refused)["Ready"]["message"]
    assert "table 'users' exists and is not a queue table" in message, message
    wait(lambda: warned(kube, namespace, "signups", "NotAQueueTable"))
    wait_ready(kube, "fine", namespace)
    assert get(kube, "deployment", "signups-workers", namespace) is None
    assert "Traceback" not in operator.log() and operator.alive
    assert table_names(postgres_url) == sorted(["fine", "users", *SHARED_TABLES])


@pytest.fixture
def silent_database() -> Iterator[str]:
    """A loopback TCP port that accepts connections and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"postgresql://ann@127.0.0.1:{listener.getsockname()[1]}/db?password=s3cretSilent"


def test_databases_that_never_answer_get_a_condition_and_starve_no_other_queue(
    kube: ControlPlane,
    namespace: str,
    operator: Operator,
    postgres_url: str,
    silent_database: str,
) -> None:
    silent = [f"silent-{n}" for n in range(8)]
    apply(
        kube,
        secret("db", namespace, postgres_url),
        secret("silent", namespace, silent_database),
        *(queue(name, namespace, "silent") for name in silent),
    )
    apply(kube, queue("fine", namespace))
    wait_ready(kube, "fine", namespace, timeout=60)
    for name in silent:
        down = wait(
            condition_is(
                kube, name, namespace, "DatabaseReachable", "False", "DatabaseUnavailable"
            ),
            timeout=90,
        )
        message = conditions(down)["DatabaseReachable"]["message"]
        assert "timeout" in message and "s3cretSilent" not in message, message
        assert conditions(down)["Ready"]["status"] == "False"
    assert operator.alive and "s3cretSilent" not in operator.log()


TENANT_BOUND_SECONDS = 30
"""How long a Queue on a database that answers may take to be Ready whatever other tenants'
databases do (docs/guarantees.md); about 2 s alone."""


def test_one_tenants_silent_databases_never_delay_another_tenants_queue(
    kube: ControlPlane, namespace: str, clusterwide_operator: Operator, postgres_url: str
) -> None:
    """Issue 44 (H2): 24 Queues of one namespace, each on its own database that accepts and
    never answers, each holding its handler for the operator's whole connect bound (60 s here),
    held every one of kopf's 20 threads: a Queue of another namespace waited 116 s."""
    clusterwide_operator.stop()
    clusterwide_operator.env["TABLEQUEUE_DB_CONNECT_TIMEOUT"] = "60"
    clusterwide_operator.start()
    other = f"{namespace}-b"
    kube.kubectl("create", "namespace", other)
    try:
        with SilentServer() as silent:
            silent_urls = {
                f"silent-{n}": f"postgresql://ann@127.0.0.1:{silent.port}/db{n}?password=pw"
                for n in range(24)
            }
            apply(
                kube,
                *(secret(name, namespace, url) for name, url in silent_urls.items()),
                *(queue(name, namespace, name) for name in silent_urls),
            )
            wait(lambda: silent.connections >= LANES_PER_NAMESPACE, timeout=60)
            apply(kube, secret("db", other, postgres_url), queue("fine", other))
            wait_ready(kube, "fine", other, timeout=TENANT_BOUND_SECONDS)
            assert clusterwide_operator.liveness()[0] == 200
    finally:
        kube.kubectl("delete", "namespace", other, "--wait=false", "--ignore-not-found")
