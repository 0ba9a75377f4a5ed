"""Firing recurring messages: each due tick of a queue's schedules is claimed and its message
enqueued in one transaction, so that of any number of callers (every worker's housekeeping, every
operator replica's timer) exactly one enqueues it, and a crash in between loses nothing.

Ticks missed while nothing ran (no worker, no operator, the database away) follow the schedule's
`missed` policy: `CatchUpOnce` enqueues one message, for the latest due tick, however many were
missed; `Skip` enqueues that message only if the tick is at most `startingDeadlineSeconds` old,
else nothing. Either way the schedule then waits for its next tick after now, and the ticks that
enqueued nothing are counted in `skipped`.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime, timedelta

import pydantic
from sqlalchemy.engine import Connection

from .. import cron
from ..errors import Conflict, InvalidInput, ScheduleNotFound
from ..models import Fired, NewMessage, ScheduleView
from ..spec import SCHEDULE_NAME_PATTERN, Schedule
from ..storage import Storage, audit, registry
from ..storage import schedules as store
from ..storage.schedules import ScheduleState
from .context import QueueContext, spec_of
from .enqueue import enqueue_in
from .publish import publish_in

log = logging.getLogger("tablequeue.schedules")


def overview(queue: QueueContext) -> list[ScheduleView]:
    """The queue's declared schedules (in spec order) with when they fire next and last."""
    if not queue.spec.schedules:
        return []
    storage = queue.storage
    with storage.transaction() as connection:
        stored = {
            state.schedule: state
            for state in store.states(connection, storage.schedules, queue.name)
        }
    views = []
    for schedule in queue.spec.schedules:
        state = stored.get(schedule.name)
        views.append(
            ScheduleView(
                name=schedule.name,
                cron=schedule.cron,
                time_zone=schedule.time_zone,
                missed=schedule.missed,
                suspend=schedule.suspend,
                message_id=schedule.message_id,
                topic=schedule.topic,
                next_tick=state.next_tick if state else None,
                last_tick=state.last_tick if state else None,
                last_fired_at=state.last_fired_at if state else None,
                last_message=state.last_message if state else None,
                fired=state.fired if state else 0,
                skipped=state.skipped if state else 0,
            )
        )
    return views


_SCHEDULE_NAME = re.compile(SCHEDULE_NAME_PATTERN)


def set_next_tick(queue: QueueContext, schedule: str, when: datetime | None) -> None:
    """Move a schedule's next tick to `when` (None: the database's now)."""
    if when is not None and when.tzinfo is None:
        raise InvalidInput(f"naive time {when.isoformat()}: give a time zone")
    if not _SCHEDULE_NAME.fullmatch(schedule):  # e.g. NUL, which PostgreSQL cannot even compare
        raise ScheduleNotFound(f"queue {queue.name!r} has no schedule {schedule[:100]!r}")
    storage = queue.storage
    with storage.transaction() as connection:
        if when is None:
            when = store.database_now(connection, storage.dialect)
        if not store.set_next_tick(connection, storage.schedules, queue.name, schedule, when):
            raise ScheduleNotFound(f"queue {queue.name!r} has no schedule {schedule!r}")


def run_now(queue: QueueContext, schedule: str) -> Fired | None:
    """Enqueue a schedule's message now (its tick is now) and keep its next tick; None when
    another caller fired it in between (it was enqueued once all the same). The error of a
    message that cannot be enqueued (e.g. a messageId rendered too long) is raised; a
    suspended schedule is a Conflict (running it would fire nothing and lose its next tick)."""
    storage = queue.storage
    with storage.transaction() as connection:
        row = registry.registry_row(storage, connection, queue.name)
    declared = spec_of(storage, queue.name, row.settings).schedules if row is not None else []
    if any(one.name == schedule and one.suspend for one in declared):
        raise Conflict(
            f"schedule {schedule!r} of queue {queue.name!r} is suspended: resume it first"
        )
    set_next_tick(queue, schedule, None)
    fired, failed = _fire_each(queue)
    _log_failures({name: error for name, error in failed.items() if name != schedule}, queue)
    if schedule in failed:
        raise failed[schedule]
    ran = next((one for one in fired if one.schedule == schedule), None)
    delivered = None
    if ran is not None:
        delivered = len(ran.deliveries) if ran.topic else int(ran.message is not None)
    audit.record_in_autocommit(
        storage, "run-schedule", queue.name, {"schedule": schedule}, delivered
    )
    return ran


def fire_due(queue: QueueContext) -> list[Fired]:
    """Claim and enqueue every due tick of the queue's schedules; what this caller fired (an
    empty list when others were first or nothing was due). Safe to call from any number of
    processes at once. A schedule whose message cannot be enqueued is logged and stays due
    (its claim is rolled back); it never keeps the others from firing."""
    fired, failed = _fire_each(queue)
    _log_failures(failed, queue)
    return fired


def _log_failures(failed: dict[str, ValueError], queue: QueueContext) -> None:
    for name, error in failed.items():
        log.warning("schedule %s of queue %s cannot fire: %s", name, queue.name, error)


def _fire_each(queue: QueueContext) -> tuple[list[Fired], dict[str, ValueError]]:
    storage = queue.storage
    with storage.transaction() as connection:
        # The registry first: a queue without schedules never reads tablequeue_schedules (a
        # worker needs no grant on it then), and one whose schedules were added after this
        # handle was made is seen.
        row = registry.registry_row(storage, connection, queue.name)
        if row is None or not row.settings.get("schedules"):
            return [], {}
        now = store.database_now(connection, storage.dialect)
        due = store.due(connection, storage.schedules, queue.name, now)
    fired, failed = [], {}
    for state in due:
        try:
            with storage.transaction() as connection:
                result = _fire(queue, connection, state)
        except ValueError as error:  # InvalidInput of the enqueue, or a placeholder's render
            failed[state.schedule] = error
            continue
        if result is not None:
            fired.append(result)
    return fired, failed


def _fire(queue: QueueContext, connection: Connection, state: ScheduleState) -> Fired | None:
    storage = queue.storage
    now = store.database_now(connection, storage.dialect)
    schedule = _declared(storage, connection, queue.name, state)
    if schedule is None:
        return None  # removed or re-timed by an apply in progress: its rows follow
    if schedule.suspend:
        return None  # its ticks stay due: on resume the missed-ticks policy decides
    catch_up = cron.due_ticks(state.cron, state.time_zone, state.next_tick, now)
    late = now - catch_up.latest > timedelta(seconds=schedule.starting_deadline_seconds)
    tick = None if schedule.missed == "Skip" and late else catch_up.latest
    claimed = store.claim(
        connection,
        storage.schedules,
        state,
        next_tick=catch_up.next,
        fired_tick=tick,
        skipped=catch_up.due - (tick is not None),
        now=now,
    )
    if not claimed:
        return None  # another caller was first
    message = None
    if tick is not None:
        try:
            made = new_message(queue.name, schedule, tick)
        except ValueError as error:  # the spec was checked with a sample tick and queue name
            problem = str(error)
            if isinstance(error, pydantic.ValidationError):
                first = error.errors()[0]
                problem = f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
            raise InvalidInput(
                f"schedule {schedule.name!r} of queue {queue.name!r}: its message for"
                f" {tick.isoformat()} is invalid: {problem}"
            ) from None
        if schedule.topic is not None:
            deliveries = publish_in(storage, connection, schedule.topic, made)
            return Fired(state.schedule, tick, catch_up.due, None, catch_up.next,
                         schedule.topic, tuple(deliveries))  # fmt: skip
        (message,) = enqueue_in(queue, connection, [made])
        store.record_message(connection, storage.schedules, state, message.id)
    return Fired(state.schedule, tick, catch_up.due, message, catch_up.next)


def _declared(
    storage: Storage, connection: Connection, name: str, state: ScheduleState
) -> Schedule | None:
    """The schedule as the registry declares it now, if it still times the stored row."""
    row = registry.registry_row(storage, connection, name)
    if row is None:
        return None
    for schedule in spec_of(storage, name, row.settings).schedules:
        if schedule.name == state.schedule:
            same = (schedule.cron, schedule.time_zone) == (state.cron, state.time_zone)
            return schedule if same else None
    return None


def new_message(queue: str, schedule: Schedule, tick: datetime) -> NewMessage:
    """The message of one tick: placeholders replaced, the tick rendered in the schedule's
    time zone."""
    context = cron.TickContext(
        queue, schedule.name, tick.astimezone(cron.time_zone(schedule.time_zone))
    )
    message_id = None
    if schedule.message_id is not None:
        message_id = cron.render_text(schedule.message_id, context)
    headers = cron.render(schedule.headers, context)
    return NewMessage(
        message=cron.render(schedule.message, context),
        message_id=message_id,
        priority=schedule.priority,
        headers=(headers or {})
        | {"tablequeue-schedule": schedule.name, "tablequeue-tick": context.value("tickUtc", None)},
    )
