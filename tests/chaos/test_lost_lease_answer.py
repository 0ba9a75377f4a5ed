"""A lease that committed while its answer was lost (the network cut mid-statement): the worker
gives those rows back before it leases again, so they run exactly once and none is abandoned.

The lost answer is made deterministic: with the network between the worker and its database cut
and the worker's lease loop failing, the test itself leases a batch *as that worker's owner*,
directly through the core, as the statement whose answer never arrived would have. Messages the
worker holds meanwhile (running across the cut, their outcomes waiting for the database) must
not be given back: they would run twice.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tablequeue import NewMessage, connect
from tablequeue.spec import QueueResource
from tests.support.stored import stored_id
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_records
from tests.worker.helpers import FAST_POLL, SYNC, StartWorker, WorkerProcess

from .proxy import cuttable_proxy

LOST = 10


@pytest.mark.timeout(180)
@pytest.mark.parametrize("engine", ["postgresql", "mariadb"])
def test_rows_of_a_lost_lease_answer_go_back_and_run_once(
    engine: str, request: pytest.FixtureRequest, start_worker: StartWorker, records: Path
) -> None:
    db_url: str = request.getfixturevalue(f"{engine}_url".replace("postgresql", "postgres"))
    database = connect(db_url)
    # Leases of 10 minutes: a row left Leased would not be swept (and abandoned) during the test.
    database.apply(QueueResource.from_name("orders", lease_seconds=600, keep_processed_for="1h"))
    queue = database.queue("orders")
    port = int(database.url.port or 0)
    with cuttable_proxy(port) as proxy:
        through_proxy = db_url.replace(f":{port}/", f":{proxy.port}/", 1)
        worker = start_worker("orders", through_proxy, SYNC, "--concurrency", "4", *FAST_POLL)
        worker.wait_ready()
        owner = worker.name  # the fixture names the owner after the worker
        held = [stored_id(e) for e in queue.enqueue_many([NewMessage(message={"hang": True})] * 2)]
        wait_until(lambda: set(_events(records, "start")) == set(held), timeout=30)

        proxy.cut()
        wait_until(lambda: _lease_failed(worker), timeout=30)
        (records / "release").touch()  # the held handlers finish: outcomes wait for the database
        wait_until(lambda: set(_events(records, "done")) == set(held), timeout=30)
        # The lease whose answer was lost: committed on the server, unknown to the worker.
        queue.enqueue_many([NewMessage(message={"n": n}) for n in range(LOST)])
        lost = queue.lease(owner, LOST).messages
        assert len(lost) == LOST and {m.lease_owner for m in lost} == {owner}
        proxy.restore()

        everything = held + [m.id for m in lost]
        wait_until(
            lambda: queue.count(status="Processed") == len(everything), timeout=60, interval=0.25
        )
        starts = Counter(_events(records, "start"))
        assert {i: starts[i] for i in everything} == dict.fromkeys(everything, 1)
        assert {queue.get(i).status for i in everything} == {"Processed"}
        assert queue.count(status="Abandoned") == 0
        gave_back = [
            line["count"]
            for line in worker.logs()
            if line.get("message") == "gave back messages a lost lease answer left leased"
        ]
        assert sum(gave_back) == LOST, gave_back
    database.close()


def _events(records: Path, event: str) -> list[int]:
    return [m for kind, m, _, _ in read_records(records) if kind == event]


def _lease_failed(worker: WorkerProcess) -> bool:
    """The worker's lease loop met the cut (not only its other tasks)."""
    return any(
        line.get("message") == "database unavailable" and line.get("task") == "lease"
        for line in worker.logs()
    )
