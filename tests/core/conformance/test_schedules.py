"""Recurring messages (`spec.schedules`): the stored schedule rows follow the spec, a due tick is
claimed and enqueued exactly once whoever races for it, missed ticks follow the policy.

Part of the conformance suite: every test runs on every engine (`db_url`). Ticks are made due by
moving the stored next tick into the past (`Queue.set_next_tick`), never by waiting for a clock.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa

from tablequeue import Database, connect, cron
from tablequeue.errors import Conflict, InvalidInput, ScheduleNotFound
from tablequeue.models import Fired
from tablequeue.spec import QueueResource

from .helpers import MakeQueue

NIGHTLY = {
    "name": "nightly",
    "cron": "0 2 * * *",
    "timeZone": "Europe/Oslo",
    "message": {"report": "sales", "day": "{{ tick:%Y-%m-%d }}", "at": "{{ tick }}"},
    "messageId": "nightly-{{ tick:%Y%m%d }}",
    "priority": 3,
    "headers": {"source": "{{ schedule }}"},
}


def every_minute(**fields: Any) -> dict[str, Any]:
    return {"name": "minutely", "cron": "* * * * *", "message": {"n": "{{ tickUtc }}"}} | fields


def db_now(database: Database) -> datetime:
    with database.transaction() as connection:
        value = connection.execute(
            sa.select(sa.type_coerce(database.dialect.now(), sa.DateTime(timezone=True)))
        ).scalar_one()
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def test_apply_stores_each_schedule_with_its_next_tick(
    database: Database, make_queue: MakeQueue
) -> None:
    applied = db_now(database)
    queue = make_queue("reports", schedules=[NIGHTLY, every_minute()])
    views = {view.name: view for view in queue.schedules()}
    now = db_now(database)
    nightly = views["nightly"]
    assert nightly.next_tick is not None and now < nightly.next_tick <= now + timedelta(days=1)
    local = nightly.next_tick.astimezone(ZoneInfo("Europe/Oslo"))
    assert (local.hour, local.minute) == (2, 0)
    assert (nightly.last_tick, nightly.fired, nightly.skipped) == (None, 0, 0)
    minutely = views["minutely"].next_tick
    assert minutely is not None and applied < minutely <= now + timedelta(minutes=1)
    assert (minutely.second, minutely.microsecond) == (0, 0)
    fired = queue.fire_schedules()
    if db_now(database) < minutely:  # a minute may begin meanwhile, and its tick be due
        assert fired == []  # nothing due yet
    assert [(f.schedule, f.tick) for f in fired] in ([], [("minutely", minutely)])
    assert queue.count() == len(fired)


def test_a_due_tick_enqueues_its_rendered_message(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue("reports", schedules=[NIGHTLY])
    # The latest 02:00 in Oslo: due, and the only tick due.
    due = cron.next_tick("0 2 * * *", "Europe/Oslo", db_now(database) - timedelta(days=1))
    local = due.astimezone(ZoneInfo("Europe/Oslo"))
    queue.set_next_tick("nightly", due)
    [fired] = queue.fire_schedules()
    assert (fired.schedule, fired.tick, fired.due, fired.message is not None) == (
        "nightly",
        due,
        1,
        True,
    )
    [message] = queue.messages()
    assert message.message_id == f"nightly-{local:%Y%m%d}"
    assert message.message == {
        "report": "sales",
        "day": f"{local:%Y-%m-%d}",
        "at": local.isoformat(),
    }
    assert message.priority == 3
    assert message.headers == {
        "source": "nightly",
        "tablequeue-schedule": "nightly",
        "tablequeue-tick": due.isoformat().replace("+00:00", "Z"),
    }
    [view] = queue.schedules()
    assert view.last_tick == due and view.last_message == message.id and view.fired == 1
    assert view.next_tick is not None and view.next_tick > db_now(database)
    assert queue.fire_schedules() == []


def test_a_schedule_with_a_topic_publishes_each_tick_to_every_subscriber(
    database: Database, make_queue: MakeQueue
) -> None:
    """The tick's message goes to the topic's subscribers (by their predicates), in the claim's
    transaction, once; the schedule's own queue gets nothing."""
    make_queue("sales-report", subscriptions=[{"topic": "nightly-close"}])
    make_queue("ledger", subscriptions=[{"topic": "nightly-close", "where": 'report == "x"'}])
    queue = make_queue("clock", schedules=[NIGHTLY | {"topic": "nightly-close"}])
    [view] = queue.schedules()
    assert view.topic == "nightly-close"
    due = cron.next_tick("0 2 * * *", "Europe/Oslo", db_now(database) - timedelta(days=1))
    queue.set_next_tick("nightly", due)
    [fired] = queue.fire_schedules()
    assert (fired.tick, fired.message, fired.topic) == (due, None, "nightly-close")
    outcomes = {d.queue: d.outcome for d in fired.deliveries}
    assert outcomes == {"sales-report": "inserted", "ledger": "filtered"}
    [delivered] = database.queue("sales-report").messages()
    assert delivered.message["report"] == "sales"
    assert delivered.headers is not None and delivered.headers["tablequeue-schedule"] == "nightly"
    assert queue.messages() == [] and database.queue("ledger").messages() == []
    assert queue.fire_schedules() == []  # the tick is claimed: nothing published twice
    assert queue.schedules()[0].fired == 1


def test_concurrent_claimers_enqueue_each_tick_exactly_once(
    db_url: str, database: Database, make_queue: MakeQueue
) -> None:
    """Eight claimers, each with its own connection pool (as separate workers and operator
    replicas have), start together on the same due tick, round after round. The schedule is
    yearly: once fired, its next tick is not due again while the claimers run (with a minutely
    one, a minute beginning between two claimers made a second tick due: rightly fired)."""
    queue = make_queue("reports", schedules=[every_minute(cron="0 0 1 1 *")])
    claimers = [connect(db_url) for _ in range(8)]
    rounds = 6
    fired_by: list[list[Fired]] = [[] for _ in claimers]
    barrier = threading.Barrier(len(claimers))
    errors: list[BaseException] = []

    def claim(index: int) -> None:
        handle = claimers[index].queue("reports")
        try:
            barrier.wait(timeout=60)
            fired_by[index].extend(handle.fire_schedules())
        except BaseException as error:  # reported below, with the others' results
            errors.append(error)

    try:
        for round_number in range(rounds):
            queue.set_next_tick("minutely", db_now(database) - timedelta(minutes=5))
            threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(claimers))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
            assert not errors, errors
            assert sum(len(fired) for fired in fired_by) == round_number + 1
    finally:
        for claimer in claimers:
            claimer.close()
    assert queue.count() == rounds
    [view] = queue.schedules()
    assert view.fired == rounds


def test_missed_ticks_catch_up_once_for_the_latest(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue("reports", schedules=[every_minute(messageId="m-{{ tickEpoch }}")])
    now = db_now(database)
    queue.set_next_tick("minutely", now - timedelta(hours=3))  # three hours of downtime
    [fired] = queue.fire_schedules()
    # The latest minute when it fired: a minute may have begun since `now`, none before it.
    latest = now.replace(second=0, microsecond=0)
    assert fired.tick is not None and latest <= fired.tick <= db_now(database)
    assert fired.due >= 180
    assert queue.count() == 1
    [view] = queue.schedules()
    assert view.skipped == fired.due - 1
    assert view.next_tick == fired.next_tick and view.next_tick > fired.tick


def test_skip_enqueues_nothing_for_a_tick_past_its_deadline(
    database: Database, make_queue: MakeQueue
) -> None:
    late = every_minute(missed="Skip", startingDeadlineSeconds=600)
    queue = make_queue("reports", schedules=[late])
    now = db_now(database)
    queue.set_next_tick("minutely", now - timedelta(days=2))
    # Every minute up to now was due; the latest is within the deadline: it fires, alone.
    [fired] = queue.fire_schedules()
    assert fired.message is not None and fired.due > cron.MAX_TICKS_WALKED
    assert queue.count() == 1

    nightly = NIGHTLY | {"missed": "Skip", "startingDeadlineSeconds": 60}
    queue = make_queue("nightly", schedules=[nightly])
    queue.set_next_tick("nightly", now - timedelta(days=3, hours=1))
    [fired] = queue.fire_schedules()
    assert (fired.tick, fired.message) == (None, None)  # every 02:00 missed by more than 60 s
    assert queue.count() == 0
    [view] = queue.schedules()
    assert view.skipped == fired.due >= 3 and view.fired == 0
    assert view.next_tick is not None and view.next_tick > now


def test_a_claim_and_its_enqueue_commit_together(database: Database, make_queue: MakeQueue) -> None:
    """The enqueue fails (the table is gone): the claim is undone, the tick stays due and fires
    once the table is back."""
    queue = make_queue("reports", schedules=[every_minute()])
    due = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
    queue.set_next_tick("minutely", due)
    with database.transaction() as connection:
        queue.table.drop(connection)
    with pytest.raises(sa.exc.DBAPIError):
        queue.fire_schedules()
    [view] = queue.schedules()
    assert (view.next_tick, view.fired, view.last_tick) == (due, 0, None)
    database.apply(QueueResource.from_name("reports", schedules=[every_minute()]))
    [fired] = database.queue("reports").fire_schedules()
    assert fired.message is not None
    assert queue.count() == 1


def test_reapplying_keeps_a_schedules_next_tick_and_changes_follow_the_spec(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue("reports", schedules=[NIGHTLY, every_minute()])
    kept = datetime(2026, 1, 1, 1, 0, tzinfo=UTC)
    queue.set_next_tick("nightly", kept)
    changed_body = NIGHTLY | {"message": {"report": "returns"}}
    retimed = every_minute(cron="30 4 * * *")  # not due while the test runs (but at 04:30)
    queue = make_queue("reports", schedules=[changed_body, retimed])
    views = {view.name: view for view in queue.schedules()}
    assert views["nightly"].next_tick == kept  # the body changed, not the timing
    assert views["minutely"].cron == "30 4 * * *"
    assert views["minutely"].next_tick is not None
    assert (views["minutely"].next_tick.hour, views["minutely"].next_tick.minute) == (4, 30)
    [fired] = queue.fire_schedules()
    assert fired.schedule == "nightly"
    assert [m.message for m in queue.messages()] == [{"report": "returns"}]

    queue = make_queue("reports", schedules=[retimed])
    assert [view.name for view in queue.schedules()] == ["minutely"]
    with pytest.raises(ScheduleNotFound, match="has no schedule 'nightly'"):
        queue.set_next_tick("nightly", kept)
    database.delete_queue("reports", drop_table=True)
    with database.transaction() as connection:
        rows = connection.execute(sa.select(database.schedules)).all()
    assert rows == []


def test_run_now_enqueues_once_and_keeps_the_next_tick(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue("reports", schedules=[NIGHTLY])
    [before] = queue.schedules()
    fired = queue.run_schedule("nightly")
    assert fired is not None and fired.message is not None
    [after] = queue.schedules()
    assert after.next_tick == before.next_tick
    assert after.fired == 1 and queue.count() == 1
    with pytest.raises(ScheduleNotFound):
        queue.run_schedule("weekly")


def test_a_suspended_schedule_fires_nothing_and_resumes_by_its_policy(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue("reports", schedules=[every_minute(suspend=True)])
    [view] = queue.schedules()
    assert view.suspend
    due = (db_now(database) - timedelta(minutes=30)).replace(microsecond=0)
    queue.set_next_tick("minutely", due)
    assert queue.fire_schedules() == [] and queue.count() == 0
    [still] = queue.schedules()
    assert (still.next_tick, still.fired, still.skipped) == (due, 0, 0)  # left due, untouched

    queue = make_queue("reports", schedules=[every_minute()])  # resumed: CatchUpOnce
    [fired] = queue.fire_schedules()
    assert fired.message is not None and fired.due >= 30
    assert queue.count() == 1


def test_a_schedule_that_cannot_enqueue_stays_due_and_never_stops_the_others(
    database: Database, make_queue: MakeQueue
) -> None:
    # The spec checks the rendered messageId with a sample queue name ("queue", 392 characters
    # here): with this queue's longer name it renders to 422, over the limit of 400.
    too_long = every_minute(name="a-broken", messageId="x" * 382 + "{{queue}}" * 2)
    queue = make_queue("reports-of-the-month", schedules=[too_long, every_minute(name="b-fine")])
    past = db_now(database) - timedelta(seconds=30)
    for name in ("a-broken", "b-fine"):
        queue.set_next_tick(name, past)
    stored = {view.name: view.next_tick for view in queue.schedules()}
    fired = queue.fire_schedules()
    assert [one.schedule for one in fired] == ["b-fine"]
    assert queue.count() == 1
    views = {view.name: view for view in queue.schedules()}
    assert views["a-broken"].next_tick == stored["a-broken"]  # still due
    assert views["a-broken"].fired == 0
    with pytest.raises(InvalidInput, match="400"):
        queue.run_schedule("a-broken")
    assert queue.count() == 1


def test_running_a_suspended_schedule_is_a_conflict_and_keeps_its_next_tick(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue("reports", schedules=[NIGHTLY | {"suspend": True}])
    [before] = queue.schedules()
    with pytest.raises(Conflict, match="suspended"):
        queue.run_schedule("nightly")
    [after] = queue.schedules()
    assert after.next_tick == before.next_tick and queue.count() == 0
