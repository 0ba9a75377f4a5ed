"""What the operator's timer runs for schedules, without a cluster: firing a Queue's due ticks
before its counts are read (so a scaled-to-zero queue gets its message and the backlog that
scales workers up), on a real database, alongside any worker doing the same."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tablequeue import connect
from tablequeue.operator.observe import _fire_and_count
from tablequeue.operator.schedules import fire_schedules
from tablequeue.spec import QueueResource

SCHEDULE = {"name": "nightly", "cron": "0 2 * * *", "message": {"report": "{{ tick }}"}}


def test_the_timer_fires_due_ticks_before_counting(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with connect(f"sqlite:///{tmp_path / 'q.db'}") as database:
        database.apply(QueueResource.from_name("reports", schedules=[SCHEDULE]))
        stats, default_status = _fire_and_count(database, "reports", "ns/reports")
        assert (stats.backlog, default_status) == (0, "Pending")  # nothing due yet

        database.queue("reports").set_next_tick("nightly")
        with caplog.at_level(logging.INFO, logger="tablequeue.operator.schedules"):
            stats, _ = _fire_and_count(database, "reports", "ns/reports")
        assert stats.backlog == 1 and stats.counts == {"Pending": 1}
        assert "[ns/reports] schedule nightly fired tick" in caplog.text

        # A worker (or another operator replica) calling at the same time finds nothing left.
        assert fire_schedules(database.queue("reports"), "ns/reports") == []
        stats, _ = _fire_and_count(database, "reports", "ns/reports")
        assert stats.backlog == 1


def test_a_queue_without_schedules_costs_one_empty_read(tmp_path: Path) -> None:
    with connect(f"sqlite:///{tmp_path / 'q.db'}") as database:
        database.apply(QueueResource.from_name("plain"))
        assert fire_schedules(database.queue("plain"), "ns/plain") == []
