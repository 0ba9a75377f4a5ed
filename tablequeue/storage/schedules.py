"""`tablequeue_schedules`: one row per declared schedule of a queue, with the next tick to fire.

The row is the exactly-once guard of recurring messages: a tick is claimed by moving `next_tick`
on with `UPDATE ... WHERE queue = :q AND schedule = :s AND next_tick = :expected`, in the same
transaction as the enqueue of its message. Of several claimers (workers, operator replicas) one
changes the row and enqueues; the others change nothing (the row lock makes them wait and then
see the new `next_tick`), and a crash before the commit undoes both the claim and the message.

Rows follow the spec: `apply` adds, re-times and deletes them (so the table holds one row per
declared schedule, no history), and forgetting a queue deletes its rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import cron
from ..sqltypes import UtcDateTime

if TYPE_CHECKING:
    from ..dialects import Dialect
    from ..spec import Schedule


@dataclass(frozen=True)
class ScheduleState:
    """A schedule as stored: when it fires next, what it fired last, ticks it left out."""

    queue: str
    schedule: str
    cron: str
    time_zone: str
    next_tick: datetime
    last_tick: datetime | None
    last_fired_at: datetime | None
    last_message: int | None
    """The id of the message the last tick enqueued (or updated)."""
    fired: int
    skipped: int
    """Ticks that enqueued nothing: skipped (Skip) or folded into one catch-up message."""

    @classmethod
    def of(cls, row: Any) -> ScheduleState:
        return cls(**{name: getattr(row, name) for name in cls.__dataclass_fields__})


def database_now(connection: Connection, dialect: Dialect) -> datetime:
    """The database clock (an aware UTC datetime)."""
    now: datetime = connection.execute(
        sa.select(sa.type_coerce(dialect.now(), UtcDateTime()))
    ).scalar_one()
    return now


def sync(
    connection: Connection,
    table: sa.Table,
    dialect: Dialect,
    queue: str,
    schedules: list[Schedule],
) -> None:
    """Make the rows of `queue` match its declared schedules (in apply's transaction): a new
    schedule, or one whose cron or time zone changed, fires first at its next tick from now; an
    unchanged one keeps its next tick; a schedule no longer declared is deleted."""
    existing = {
        row.schedule: row
        for row in connection.execute(sa.select(table).where(table.c.queue == queue))
    }
    declared = {schedule.name for schedule in schedules}
    gone = [name for name in existing if name not in declared]
    if gone:
        connection.execute(table.delete().where(table.c.queue == queue, table.c.schedule.in_(gone)))
    now = database_now(connection, dialect)
    for schedule in schedules:
        row = existing.get(schedule.name)
        if row is not None and (row.cron, row.time_zone) == (schedule.cron, schedule.time_zone):
            continue
        timing = {
            "cron": schedule.cron,
            "time_zone": schedule.time_zone,
            "next_tick": cron.next_tick(schedule.cron, schedule.time_zone, now),
            "updated_at": now,
        }
        if row is None:
            connection.execute(
                table.insert().values(
                    queue=queue, schedule=schedule.name, fired=0, skipped=0, **timing
                )
            )
        else:
            connection.execute(
                table.update()
                .where(table.c.queue == queue, table.c.schedule == schedule.name)
                .values(**timing)
            )


def forget(connection: Connection, table: sa.Table, queue: str) -> None:
    connection.execute(table.delete().where(table.c.queue == queue))


def states(connection: Connection, table: sa.Table, queue: str) -> list[ScheduleState]:
    rows = connection.execute(
        sa.select(table).where(table.c.queue == queue).order_by(table.c.schedule)
    )
    return [ScheduleState.of(row) for row in rows]


def due_statement(table: sa.Table, queue: str, now: datetime) -> sa.Select[Any]:
    """The schedules of a queue whose next tick has come (served by the primary key)."""
    return (
        sa.select(table)
        .where(table.c.queue == queue, table.c.next_tick <= now)
        .order_by(table.c.schedule)
    )


def due(connection: Connection, table: sa.Table, queue: str, now: datetime) -> list[ScheduleState]:
    return [ScheduleState.of(row) for row in connection.execute(due_statement(table, queue, now))]


def claim_statement(
    table: sa.Table,
    state: ScheduleState,
    *,
    next_tick: datetime,
    fired_tick: datetime | None,
    skipped: int,
    now: datetime,
) -> sa.Update:
    """The exactly-once guard: moves the row on only if it still holds the tick that was read."""
    values: dict[str, Any] = {
        "next_tick": next_tick,
        "skipped": table.c.skipped + skipped,
        "updated_at": now,
    }
    if fired_tick is not None:
        values |= {"last_tick": fired_tick, "last_fired_at": now, "fired": table.c.fired + 1}
    return (
        table.update()
        .where(
            table.c.queue == state.queue,
            table.c.schedule == state.schedule,
            table.c.next_tick == state.next_tick,
            table.c.cron == state.cron,
            table.c.time_zone == state.time_zone,
        )
        .values(**values)
    )


def claim(
    connection: Connection,
    table: sa.Table,
    state: ScheduleState,
    *,
    next_tick: datetime,
    fired_tick: datetime | None,
    skipped: int,
    now: datetime,
) -> bool:
    """Move the schedule from `state.next_tick` to `next_tick`: True for the one claimer that
    found it unchanged. `fired_tick` is the tick whose message this transaction enqueues (None
    when every due tick is skipped)."""
    statement = claim_statement(
        table, state, next_tick=next_tick, fired_tick=fired_tick, skipped=skipped, now=now
    )
    return connection.execute(statement).rowcount == 1


def record_message(
    connection: Connection, table: sa.Table, state: ScheduleState, message: int | None
) -> None:
    connection.execute(
        table.update()
        .where(table.c.queue == state.queue, table.c.schedule == state.schedule)
        .values(last_message=message)
    )


def set_next_tick(
    connection: Connection, table: sa.Table, queue: str, schedule: str, next_tick: datetime
) -> bool:
    """Move a schedule's next tick by hand (tests, or to fire one now); False if unknown."""
    result = connection.execute(
        table.update()
        .where(table.c.queue == queue, table.c.schedule == schedule)
        .values(next_tick=next_tick)
    )
    return result.rowcount == 1
