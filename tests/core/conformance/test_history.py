"""Job history: results that outlive their row (keepResultsFor), attempts of failures and lost
leases, and retention rounds guarded by the housekeeping lease.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from tablequeue import Completion, Database, Failure, NewMessage
from tablequeue.errors import MessageNotFound
from tablequeue.limits import ATTEMPTS_KEPT
from tablequeue.storage.history import ERROR_LENGTH
from tests.support.statements import StatementsRun
from tests.support.waiting import wait_until

from .helpers import MakeQueue


def _rows(database: Database, table: sa.Table) -> int:
    with database.transaction() as connection:
        return int(connection.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def test_a_deleted_success_leaves_its_result(database: Database, make_queue: MakeQueue) -> None:
    queue = make_queue("orders")
    done = queue.enqueue({"n": 1}, message_id="A-1")
    [m] = queue.lease("w1", 5).messages
    settled = queue.complete("w1", [Completion(m, result={"ok": True}, progress=7)])
    assert settled.deleted == 1 and queue.count() == 0
    job = database.find_job(str(done.tracking_id))
    assert job.source == "results" and job.queue == "orders"
    assert job.status == "Processed" and job.result == {"ok": True}
    assert job.id == done.id and job.message_id == "A-1" and job.attempts == 1
    assert job.processed_at is not None and job.progress is None


def test_a_kept_success_answers_from_the_row_and_the_result_is_kept_too(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue("orders", keep_processed_for="7d")
    done = queue.enqueue({"n": 1})
    [m] = queue.lease("w1", 5).messages
    assert queue.complete("w1", [Completion(m, result=[1, 2])]).processed == 1
    job = database.find_job(str(done.tracking_id))
    assert job.source == "queue" and job.status == "Processed" and job.result == [1, 2]
    queue.delete(m.id)
    after = database.find_job(str(done.tracking_id))
    assert after.source == "results" and after.result == [1, 2]


def test_processed_again_replaces_the_result(database: Database, make_queue: MakeQueue) -> None:
    queue = make_queue("orders", keep_processed_for="7d")
    done = queue.enqueue({"v": 1}, message_id="same")
    [m] = queue.lease("w1", 5).messages
    queue.complete("w1", [Completion(m, result="first")])
    queue.enqueue({"v": 2}, message_id="same")  # a new version of the same row
    [m] = queue.lease("w1", 5).messages
    queue.complete("w1", [Completion(m, result="second")])
    queue.delete(m.id)
    job = database.find_job(str(done.tracking_id))
    assert job.source == "results" and job.result == "second"
    assert _rows(database, database.history.results) == 1


def test_keep_results_for_zero_records_nothing(database: Database, make_queue: MakeQueue) -> None:
    queue = make_queue("orders", keep_results_for="0s")
    done = queue.enqueue({"n": 1})
    [m] = queue.lease("w1", 5).messages
    assert queue.complete("w1", [Completion(m, result=1)]).deleted == 1
    with pytest.raises(MessageNotFound):
        database.find_job(str(done.tracking_id))
    assert _rows(database, database.history.results) == 0


def test_a_final_failure_leaves_an_error_result_and_attempts(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue("orders", max_attempts=2, retry={"delay_seconds": 0})
    done = queue.enqueue({"n": 1})
    [m] = queue.lease("w1", 5, correlation_id="batch-1").messages
    assert queue.fail("w1", [Failure(m, "first\nboom")]).retrying == 1
    assert _rows(database, database.history.results) == 0  # retrying: no final outcome yet
    wait_until(lambda: queue.lease("w2", 5, correlation_id="batch-2").messages != [])
    [m] = queue.messages()
    assert m.status == "Leased"
    assert queue.fail("w2", [Failure(m, "x" * (ERROR_LENGTH + 500))]).errored == 1
    attempts = queue.attempts(queue.get(m.id))
    assert [(a.attempt, a.kind, a.owner, a.correlation_id) for a in attempts] == [
        (1, "failure", "w1", "batch-1"),
        (2, "failure", "w2", "batch-2"),
    ]
    assert attempts[0].error == "first\nboom" and len(attempts[1].error or "") == ERROR_LENGTH
    assert attempts[0].at <= attempts[1].at
    queue.delete(m.id)
    job = database.find_job(str(done.tracking_id))
    assert job.source == "results" and job.status == "Error" and job.attempts == 2
    assert (job.last_error or "").startswith("xxx")


def test_a_lost_lease_is_an_attempt(database: Database, make_queue: MakeQueue) -> None:
    queue = make_queue("orders", on_lease_expired="Retry", max_attempts=5)
    queue.enqueue({"n": 1})
    [m] = queue.lease("w1", 5, lease_seconds=1, correlation_id="lost-1").messages
    wait_until(lambda: queue.sweep().retried == 1)
    [attempt] = queue.attempts(queue.get(m.id))
    assert (attempt.kind, attempt.owner, attempt.correlation_id) == (
        "lease-expired",
        "w1",
        "lost-1",
    )
    assert attempt.attempt == 1 and "Pending" in (attempt.error or "")
    # The late worker's failure changes nothing and records no attempt.
    assert queue.fail("w1", [Failure(m, "late")]).lease_lost == 1
    assert len(queue.attempts(queue.get(m.id))) == 1


def test_attempts_are_bounded_per_message(database: Database, make_queue: MakeQueue) -> None:
    queue = make_queue("orders", max_attempts=1000, retry={"delay_seconds": 0})
    queue.enqueue({"n": 1})
    other = queue.enqueue({"n": 2}, priority=-1)
    for n in range(ATTEMPTS_KEPT + 3):
        batch = queue.lease("w1", 1, correlation_id=f"c{n}").messages
        assert [m.id for m in batch] != [other.id]
        queue.fail("w1", [Failure(batch[0], f"error {n}")])
    [first] = [m for m in queue.messages() if m.id != other.id]
    kept = queue.attempts(first)
    assert len(kept) == ATTEMPTS_KEPT
    assert [a.correlation_id for a in kept] == [f"c{n}" for n in range(3, ATTEMPTS_KEPT + 3)]


def test_retention_purges_messages_results_and_attempts_in_batches(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue("orders", keep_processed_for="0s", keep_results_for="2s", max_attempts=1)
    for n in range(7):
        queue.enqueue({"n": n})
    batch = queue.lease("w1", 10).messages
    queue.complete("w1", [Completion(m, result=m.message) for m in batch[:5]])
    queue.fail("w1", [Failure(m, "no") for m in batch[5:]])  # Error rows stay
    assert _rows(database, database.history.results) == 7
    assert _rows(database, database.history.attempts) == 2
    kept_forever = make_queue("kept", keep_processed_for="forever", keep_results_for="forever")
    kept_forever.enqueue({"n": 1})
    kept_forever.complete("w1", [Completion(m) for m in kept_forever.lease("w1", 5).messages])

    removed: list[int] = []

    def purge_results() -> bool:
        purged = queue.purge_retained("w1", batch=2)
        assert purged is not None
        removed.append(purged.results)
        return sum(removed) == 7

    with StatementsRun(database) as seen:
        wait_until(purge_results, 30)  # once 2 s old, in one round or several
    deletes = [t for t in seen if t.lstrip().upper().startswith("DELETE FROM TABLEQUEUE_RESULTS")]
    assert len(deletes) >= 4  # 7 results, at most 2 a statement
    assert _rows(database, database.history.results) == 1  # the other queue's
    assert _rows(database, database.history.attempts) == 2  # their rows still exist
    for m in batch[5:]:
        queue.delete(m.id)
    purged = queue.purge_retained("w1")
    assert purged is not None and purged.attempts == 2
    assert kept_forever.purge_retained("w1") is not None
    assert kept_forever.count() == 1 and _rows(database, database.history.results) == 1


def test_retention_purges_processed_rows_past_keep_processed_for(make_queue: MakeQueue) -> None:
    queue = make_queue("orders", keep_processed_for="1s", keep_results_for="forever")
    for n in range(3):
        queue.enqueue({"n": n})
    queue.complete("w1", [Completion(m) for m in queue.lease("w1", 10).messages])
    assert queue.count(status="Processed") == 3
    wait_until(lambda: (p := queue.purge_retained("w1")) is not None and p.messages == 3, 30)
    assert queue.count() == 0


def test_retention_keeps_each_final_status_for_its_own_duration(make_queue: MakeQueue) -> None:
    queue = make_queue(
        "orders",
        keep_error_for="1s",
        keep_expired_for="1s",
        keep_cancelled_for="forever",
        keep_results_for="forever",
    )
    statuses = ["Error", "Expired", "Cancelled", "Abandoned", "Pending"]
    ids = {status: queue.enqueue({"status": status}).id or 0 for status in statuses}
    for status in statuses[:4]:
        assert queue.set_status(status, ids=[ids[status]]) == 1
    removed: list[int] = []

    def purge() -> bool:
        purged = queue.purge_retained("w1")
        assert purged is not None
        removed.append(purged.messages)
        return sum(removed) >= 2

    # Error and Expired go once a second old (in one round or two); Cancelled is kept forever,
    # Abandoned 30 days
    wait_until(purge, 30)
    assert sum(removed) == 2
    assert {m.status for m in queue.messages()} == {"Cancelled", "Abandoned", "Pending"}


def test_the_defaults_keep_failures_a_month_and_the_rest_a_week(make_queue: MakeQueue) -> None:
    spec = make_queue("orders").spec
    days = {status: spec.keep_final(status) for status in ("Error", "Abandoned", "Cancelled")}
    assert days == {"Error": timedelta(30), "Abandoned": timedelta(30), "Cancelled": timedelta(7)}
    assert spec.keep_final("Expired") == timedelta(7) and spec.keep_results == timedelta(hours=1)


@pytest.mark.parametrize("drop_table", [True, False])
def test_a_deleted_queues_results_and_attempts_are_purged_by_any_housekeeper(
    database: Database, make_queue: MakeQueue, drop_table: bool
) -> None:
    gone, stays = make_queue("gone", keep_results_for="forever"), make_queue("stays")
    for queue in (gone, stays):
        for n in range(3):
            queue.enqueue({"n": n})
        batch = queue.lease("w1", 3).messages
        queue.complete("w1", [Completion(m) for m in batch[:2]])  # two results
        queue.fail("w1", [Failure(batch[2], "no")])  # an Error row, its result and attempt
    assert gone.purge_retained("w1") is not None  # the queue's housekeeping row exists
    gone.release_housekeeping("w1")  # its worker stopped (else its lease lapses first)
    back = make_queue("back")  # deleted, then applied again before any housekeeper ran
    back.enqueue({"n": 1})
    back.complete("w1", [Completion(m) for m in back.lease("w1", 1).messages])
    database.delete_queue("back", drop_table=False)
    make_queue("back")
    database.delete_queue("gone", drop_table=drop_table)
    never_housekept = make_queue("never")  # deleted before any worker made its row
    never_housekept.enqueue({"n": 1})
    never_housekept.complete("w1", [Completion(m) for m in never_housekept.lease("w1", 1).messages])
    database.delete_queue("never", drop_table=True)

    purged = stays.purge_retained("w2", batch=2)
    assert purged is not None and purged.leftovers == 3 + 1 + 1  # gone's 3 and 1, never's 1
    by_queue = _count_by_queue(database)
    assert by_queue["results"] == {"stays": 3, "back": 1}
    assert by_queue["attempts"] == {"stays": 1}
    assert by_queue["housekeeping"] == {"stays", "back"}  # back is a queue again
    again = stays.purge_retained("w2")
    assert again is not None and again.leftovers == 0


def _count_by_queue(database: Database) -> dict[str, Any]:
    history = database.history
    with database.transaction() as connection:
        counts: dict[str, Any] = {
            name: dict(
                connection.execute(
                    sa.select(table.c.queue, sa.func.count()).group_by(table.c.queue)
                ).all()
            )
            for name, table in (("results", history.results), ("attempts", history.attempts))
        }
        housekept = set(connection.execute(sa.select(history.housekeeping.c.queue)).scalars())
    return counts | {"housekeeping": housekept}


def test_one_housekeeper_at_a_time(database: Database, make_queue: MakeQueue) -> None:
    queue = make_queue("orders")
    other = database.queue("orders")  # another worker's handle
    assert queue.purge_retained("w1", lease_seconds=600) is not None
    assert queue.housekeeping_holder() == "w1"
    assert other.purge_retained("w2") is None
    assert queue.purge_retained("w1") is not None  # the holder keeps it
    queue.release_housekeeping("w1")
    assert other.purge_retained("w2", lease_seconds=8) is not None
    assert queue.purge_retained("w1") is None  # (unless this machine stalled for 8 s)
    wait_until(lambda: queue.housekeeping_holder() is None, 60)  # w2's lease lapsed
    assert queue.purge_retained("w1") is not None


def test_housekeepers_racing_for_the_lease_get_one_winner(
    db_url: str, make_queue: MakeQueue
) -> None:
    make_queue("orders")
    contenders = 4
    start = threading.Barrier(contenders)
    won: list[str] = []
    errors: list[BaseException] = []

    def contend(owner: str) -> None:
        with Database(db_url) as database:
            queue = database.queue("orders")
            try:
                start.wait(30)
                if queue.purge_retained(owner, lease_seconds=600) is not None:
                    won.append(owner)
            except BaseException as error:  # reported below
                errors.append(error)

    threads = [threading.Thread(target=contend, args=(f"w{n}",)) for n in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors and len(won) == 1


def test_an_unknown_tracking_id_is_not_found(database: Database, make_queue: MakeQueue) -> None:
    make_queue("orders")
    with pytest.raises(MessageNotFound):
        database.find_job(str(uuid.uuid4()))


def test_results_cost_no_statement_when_off_and_none_where_the_engine_folds(
    database: Database, make_queue: MakeQueue
) -> None:
    off = make_queue("off", keep_results_for="0s")
    on = make_queue("on")
    for queue in (off, on):
        queue.enqueue_many([NewMessage(message={"n": n}) for n in range(5)])
    batch = off.lease("w1", 10).messages
    with StatementsRun(database) as seen:
        assert off.complete("w1", [Completion(m) for m in batch]).deleted == 5
    assert not any("tablequeue_" in text for text in seen)
    without_results = len(seen)
    batch = on.lease("w1", 10).messages
    with StatementsRun(database) as seen:
        assert on.complete("w1", [Completion(m, result=m.id) for m in batch]).deleted == 5
    assert any("tablequeue_results" in text for text in seen)
    if database.dialect.capabilities.folds_writes:
        assert len(seen) == without_results == 1
