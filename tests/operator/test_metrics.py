"""The operator's /metrics match the database (and its samples reach the chart rollup), and
its liveness endpoint answers."""

from __future__ import annotations

import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tablequeue import Database, connect
from tablequeue.rollup import chart_series
from tests.operator.conftest import (
    messages,
    wait,
)
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import (
    Operator,
    apply,
    queue,
    secret,
    wait_ready,
)

# The first test may build the control plane (minutes on a cold machine); later runs start it in
# seconds from the user's cache folder.
pytestmark = pytest.mark.timeout(600)


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
        # No worker runs: the operator's ticks sample the backlog for the charts.
        wait(lambda: 7 in chart_series(db, "1h", ["metered"])["queues"][0]["backlog"] or None)
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
