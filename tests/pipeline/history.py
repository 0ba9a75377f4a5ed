"""A queue with a past: messages enqueued through the core, then given finished statuses and
times spread over hours (set with SQL, as if workers had run them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from tablequeue import NewMessage, Queue

ERRORS = (
    "SMTP timeout\nTraceback (most recent call last):\n  File 'send.py', line 3",
    "Address rejected: no such user",
    "Template missing: order-confirmation\n  at render()",
)
START = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=3)
"""Most of the history happened three days ago; every 7th message finished an hour ago."""


def fill_history(queue: Queue, count: int, spread_hours: int = 6) -> None:
    """`count` messages: 60% Processed, 20% Error (three error texts), 10% Cancelled,
    10% still Pending; finished ones over `spread_hours` hours."""
    queue.enqueue_many([NewMessage(message={"n": n}, message_id=f"m-{n}") for n in range(count)])
    t = queue.table
    with queue.storage.transaction() as connection:
        ids = [row.id for row in connection.execute(sa.select(t.c.id).order_by(t.c.id))]
        updates = [_past(number, row_id, spread_hours) for number, row_id in enumerate(ids)]
        statement = (
            sa.update(t)
            .where(t.c.id == sa.bindparam("b_id"))
            .values(
                status=sa.bindparam("b_status"),
                created_at=sa.bindparam("b_created"),
                process_after=sa.bindparam("b_due"),
                processed_at=sa.bindparam("b_processed"),
                started_at=sa.bindparam("b_started"),
                updated_at=sa.bindparam("b_updated"),
                last_error=sa.bindparam("b_error"),
            )
        )
        connection.execute(statement, [u for u in updates if u is not None])


def _past(number: int, row_id: int, spread_hours: int) -> dict[str, object] | None:
    kind = number % 10
    if kind == 9:
        return None  # Pending
    base = START if number % 7 else datetime.now(UTC) - timedelta(hours=1)
    finished = base + timedelta(seconds=(number * 7919) % (spread_hours * 3600))
    due = finished - timedelta(seconds=(number * 31) % 900, microseconds=(number * 17) % 999_983)
    created = due - timedelta(seconds=(number * 13) % 240)
    # Leased some way between due and finished; every 11th finished before tables recorded it.
    started = None if number % 11 == 0 else due + (finished - due) * (((number * 7) % 10) / 10)
    status = "Processed" if kind < 6 else "Error" if kind < 8 else "Cancelled"
    return {
        "b_id": row_id,
        "b_status": status,
        "b_created": created,
        "b_due": due,
        "b_processed": finished if status == "Processed" else None,
        "b_started": started if status != "Cancelled" else None,
        "b_updated": finished,
        "b_error": ERRORS[number % 3] if status == "Error" else None,
    }
