"""The operator's state without a cluster: one memo for all Queues, the per-URL database cache,
the queue gauges, and the retry back-off of its handlers."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from tablequeue import QueueStats
from tablequeue.operator.conditions import NotReady
from tablequeue.operator.databases import Databases
from tablequeue.operator.gauges import QueueGauges
from tablequeue.operator.reconcile import RETRY_BACKOFF
from tablequeue.operator.state import OperatorState, OverLimit, Settings
from tablequeue.spec import QueueResource


def test_every_queue_shares_the_operators_state() -> None:
    state = OperatorState(Settings(worker_image="tq/worker:1", interval=2.0))
    assert copy.copy(state) is state  # kopf copies the operator's memo for each resource


def test_the_kubernetes_client_comes_with_the_startup_handler() -> None:
    state = OperatorState(Settings())
    with pytest.raises(RuntimeError, match="startup handler"):
        state.kube  # noqa: B018


def test_a_queue_without_a_database_reference_is_not_ready() -> None:
    state = OperatorState(Settings())
    with pytest.raises(NotReady) as raised:
        state.database("default", QueueResource.from_name("orders"))
    assert (raised.value.kind, raised.value.reason) == ("DatabaseReachable", "NoDatabase")
    assert raised.value.condition()["status"] == "False"


def test_databases_share_one_connection_pool_per_url_and_remember_each_queues_url(
    tmp_path: Path,
) -> None:
    databases = Databases()
    url = f"sqlite:///{tmp_path / 'queues.db'}"
    first = databases.of_queue(("shop", "orders"), url)
    assert databases.of_queue(("shop", "mail"), url) is first
    assert databases.connect(url) is first
    assert databases.last_url(("shop", "orders")) == url
    databases.forget(("shop", "orders"))
    assert databases.last_url(("shop", "orders")) is None
    assert databases.last_url(("shop", "mail")) == url
    databases.close()
    assert databases.connect(url) is not first  # closed: a new pool on the next use
    databases.close()


def test_an_invalid_database_url_is_not_ready() -> None:
    with pytest.raises(NotReady) as raised:
        Databases().connect("nosuchengine://somewhere/db")
    assert (raised.value.kind, raised.value.reason) == ("DatabaseReachable", "InvalidDatabaseURL")


def test_more_replicas_than_the_operators_maximum_are_refused_naming_the_setting() -> None:
    wide = QueueResource.from_name("orders", workers={"autoscaling": {"max_replicas": 101}})
    with pytest.raises(OverLimit, match="maxReplicas: 101 is more than this operator's maximum"):
        Settings().check(wide.spec)
    Settings(max_replicas=101).check(wide.spec)


def _stats(counts: dict[str, int], backlog: int) -> QueueStats:
    return QueueStats("orders", counts, backlog, 0, 1.5, "Healthy")


def test_gauges_read_zero_for_a_status_without_rows_and_vanish_with_their_queue() -> None:
    gauges = QueueGauges()
    queue = ("gauges-test", "orders")
    labels = {"namespace": "gauges-test", "queue": "orders"}

    def messages(status: str) -> float | None:
        return REGISTRY.get_sample_value("tablequeue_messages", labels | {"status": status})

    gauges.export(queue, _stats({"Pending": 3, "Error": 1}, backlog=3))
    assert (messages("Pending"), messages("Error")) == (3, 1)
    assert REGISTRY.get_sample_value("tablequeue_backlog", labels) == 3
    assert REGISTRY.get_sample_value("tablequeue_queue_healthy", labels) == 1

    gauges.export(queue, _stats({"Error": 1}, backlog=0))
    assert (messages("Pending"), messages("Error")) == (0, 1)

    gauges.forget(queue)
    assert (messages("Pending"), messages("Error")) == (None, None)
    assert REGISTRY.get_sample_value("tablequeue_backlog", labels) is None


def test_handlers_retry_after_5_seconds_doubling_up_to_5_minutes() -> None:
    delays = [RETRY_BACKOFF.delay(retry) for retry in range(8)]
    assert delays == [5, 10, 20, 40, 80, 160, 300, 300]
