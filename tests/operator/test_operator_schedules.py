"""What the operator's timer runs for schedules: firing a Queue's due ticks before its counts are
read (so a scaled-to-zero queue gets its message and the backlog that scales workers up), on a
real database, alongside any worker doing the same; then once against a real control plane."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tablequeue import connect
from tablequeue.operator.observe import _fire_and_count
from tablequeue.operator.schedules import fire_schedules
from tablequeue.spec import QueueResource
from tests.operator.conftest import replicas_of, status_of, wait
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import Operator, apply, queue, secret, wait_ready

SCHEDULE = {"name": "nightly", "cron": "0 2 * * *", "message": {"report": "{{ tick }}"}}


def test_the_timer_fires_due_ticks_before_counting(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with connect(f"sqlite:///{tmp_path / 'q.db'}") as database:
        database.apply(QueueResource.from_name("reports", schedules=[SCHEDULE]))
        stats, default_status, schedules = _fire_and_count(database, "reports", "ns/reports")
        assert (stats.backlog, default_status) == (0, "Pending")  # nothing due yet
        [shown] = schedules
        assert shown["nextTick"].endswith("T02:00:00Z") and shown["lastTick"] is None

        database.queue("reports").set_next_tick("nightly")
        with caplog.at_level(logging.INFO, logger="tablequeue.operator.schedules"):
            stats, _, schedules = _fire_and_count(database, "reports", "ns/reports")
        assert stats.backlog == 1 and stats.counts == {"Pending": 1}
        assert (schedules[0]["fired"], schedules[0]["lastMessage"]) == (1, 1)
        assert "[ns/reports] schedule nightly fired tick" in caplog.text

        # A worker (or another operator replica) calling at the same time finds nothing left.
        assert fire_schedules(database.queue("reports"), "ns/reports") == []
        stats, _, _ = _fire_and_count(database, "reports", "ns/reports")
        assert stats.backlog == 1


def test_a_queue_without_schedules_costs_one_empty_read(tmp_path: Path) -> None:
    with connect(f"sqlite:///{tmp_path / 'q.db'}") as database:
        database.apply(QueueResource.from_name("plain"))
        assert fire_schedules(database.queue("plain"), "ns/plain") == []
        assert _fire_and_count(database, "plain", "ns/plain")[2] == []


def test_a_schedule_that_cannot_fire_is_logged_and_the_counts_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with connect(f"sqlite:///{tmp_path / 'q.db'}") as database:
        database.apply(QueueResource.from_name("reports", schedules=[SCHEDULE]))
        reports = database.queue("reports")
        reports.set_next_tick("nightly")
        with database.transaction() as connection:
            connection.exec_driver_sql("DROP TABLE reports")
        with caplog.at_level(logging.WARNING, logger="tablequeue.operator.schedules"):
            assert fire_schedules(reports, "ns/reports") == []
        assert "[ns/reports] firing schedules failed" in caplog.text
        [view] = reports.schedules()
        assert view.fired == 0  # still due: the claim was undone with the failed enqueue


# --- against a real control plane -----------------------------------------------------------


@pytest.mark.timeout(600)
def test_the_operator_fires_the_schedule_of_a_queue_scaled_to_zero(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str
) -> None:
    """No worker runs (minReplicas 0): the operator's timer enqueues the due tick, and that
    message is the backlog that scales the workers up."""
    autoscaling = {"mode": "Operator", "minReplicas": 0, "maxReplicas": 2, "cooldownSeconds": 3}
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue("reports", namespace, schedules=[SCHEDULE], workers={"autoscaling": autoscaling}),
    )
    wait_ready(kube, "reports", namespace)
    db = connect(postgres_url)
    try:
        reports = db.queue("reports")
        assert reports.count() == 0 and replicas_of(kube, "reports", namespace) == 0
        reports.set_next_tick("nightly")
        wait(lambda: reports.count() == 1)
        wait(lambda: replicas_of(kube, "reports", namespace) == 1)
        [view] = reports.schedules()
        assert view.fired == 1 and view.last_message == reports.messages()[0].id
        shown = wait(lambda: (status_of(kube, "reports", namespace).get("schedules") or [{}])[0])
        wait(lambda: status_of(kube, "reports", namespace)["schedules"][0]["fired"] == 1)
        assert shown["name"] == "nightly" and shown["nextTick"].endswith(":00Z")
    finally:
        db.close()

    # What the CRD schema can reject, kubectl apply rejects: two schedules of one name.
    twice = queue("twice", namespace, schedules=[SCHEDULE, SCHEDULE])
    refused = apply(kube, twice, check=False)
    assert refused.returncode != 0 and "Duplicate value" in refused.stderr, refused.stderr
