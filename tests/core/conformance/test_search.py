"""Searching a queue's messages by the text of their last error and by when they were created or
last changed: each filter, combined with each other and with status and predicate, LIKE's
wildcards and SQL in the text as plain characters, times in any offset, empty results, paging.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa

from tablequeue import Database, Failure, Queue
from tablequeue.errors import InvalidInput

from .helpers import MakeQueue

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
ERRORS = {
    "timeout": "TimeoutError: upstream took 30s",
    "percent": "ValueError: discount 100% off",
    "underscore": "KeyError: 'order_id'",
    "drop": "ValueError: name '; DROP TABLE orders; --",
    "unicode": "RuntimeError: Ärger mit der Bestellung",
    "bracket": "IndexError: items[0] missing",
}


def failed(queue: Queue, errors: dict[str, str]) -> dict[str, int]:
    """One message per error, each failed for good with that error text: name -> id."""
    ids = {name: queue.enqueue({"name": name}).id or 0 for name in errors}
    leased = queue.lease("w1", len(ids)).messages
    by_id = {m.id: m for m in leased}
    queue.fail(
        "w1",
        [Failure(by_id[ids[name]], text, permanent=True) for name, text in errors.items()],
    )
    return ids


def set_times(
    database: Database, queue: Queue, times: dict[int, tuple[datetime, datetime]]
) -> None:
    """Give messages their created and updated times (the database clock wrote them)."""
    with database.transaction() as connection:
        for message_id, (created, updated) in times.items():
            connection.execute(
                sa.update(queue.table)
                .where(queue.table.c.id == message_id)
                .values(created_at=created, updated_at=updated)
            )


def ids(found: list) -> list[int]:  # type: ignore[type-arg]
    return [m.id for m in found]


def test_error_text_is_a_case_insensitive_substring(make_queue: MakeQueue) -> None:
    queue = make_queue()
    made = failed(queue, ERRORS)
    queue.enqueue({"name": "never failed"})
    assert ids(queue.messages(error_contains="TIMEOUTERROR")) == [made["timeout"]]
    assert ids(queue.messages(error_contains="upstream took")) == [made["timeout"]]
    assert ids(queue.messages(error_contains="valueerror")) == sorted(
        [made["percent"], made["drop"]]
    )
    assert ids(queue.messages(error_contains="mit der")) == [made["unicode"]]
    assert queue.messages(error_contains="no such error") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100%", ["percent"]),
        ("%", ["percent"]),  # a wildcard would match every error
        ("_", ["underscore"]),
        ("r_i", ["underscore"]),
        ("0%_", []),  # a pattern `0%_` would match the percent message
        ("[0]", ["bracket"]),  # SQL Server's character class: plain here
        ("s[0", ["bracket"]),
        ("/", []),  # the escape character itself
        ("'; DROP TABLE orders; --", ["drop"]),
    ],
)
def test_wildcards_and_sql_are_plain_text(
    make_queue: MakeQueue, text: str, expected: list[str]
) -> None:
    queue = make_queue()
    made = failed(queue, ERRORS)
    assert ids(queue.messages(error_contains=text)) == sorted(made[n] for n in expected)
    assert queue.count() == len(ERRORS)  # the table is still there


def test_a_retried_message_is_found_by_its_last_error(make_queue: MakeQueue) -> None:
    queue = make_queue(max_attempts=3)
    message = queue.enqueue({"n": 1})
    [leased] = queue.lease("w1", 1).messages
    queue.fail("w1", [Failure(leased, "ConnectionError: reset by peer")])
    found = queue.messages(error_contains="reset by peer")
    assert ids(found) == [message.id]
    assert found[0].status != "Error"  # due again, with its last error kept


def test_time_ranges_include_after_and_exclude_before(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    made = [queue.enqueue({"n": n}).id or 0 for n in range(4)]
    hour = timedelta(hours=1)
    set_times(
        database,
        queue,
        {made[n]: (T0 + n * hour, T0 + (3 - n) * hour + timedelta(minutes=30)) for n in range(4)},
    )
    assert ids(queue.messages(created_after=T0 + hour)) == made[1:]
    assert ids(queue.messages(created_before=T0 + hour)) == made[:1]
    assert ids(queue.messages(created_after=T0 + hour, created_before=T0 + 3 * hour)) == made[1:3]
    # updated times run the other way: message 3 changed first
    assert ids(queue.messages(updated_after=T0 + 2 * hour)) == made[:2]
    assert ids(queue.messages(updated_before=T0 + hour)) == made[3:]
    assert ids(
        queue.messages(created_after=T0 + hour, updated_after=T0 + hour + timedelta(minutes=30))
    ) == [made[1], made[2]]
    assert queue.messages(created_after=T0 + 3 * hour, created_before=T0 + hour) == []
    assert queue.messages(created_after=T0 + 10 * hour) == []


def test_times_in_any_offset_are_the_same_instant(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    made = [queue.enqueue({"n": n}).id or 0 for n in range(2)]
    set_times(database, queue, {made[0]: (T0, T0), made[1]: (T0 + timedelta(hours=2),) * 2})
    vienna_summer = timezone(timedelta(hours=2))
    new_york = timezone(timedelta(hours=-5))
    at = (T0 + timedelta(hours=1)).astimezone(vienna_summer)
    assert ids(queue.messages(created_after=at)) == made[1:]
    assert ids(queue.messages(created_before=at.astimezone(new_york))) == made[:1]
    assert ids(queue.messages(created_after=T0.astimezone(new_york))) == made


def test_filters_combine_with_status_predicate_and_paging(
    database: Database, make_queue: MakeQueue
) -> None:
    queue = make_queue()
    errors = {f"e{n}": f"TimeoutError: try {n}" for n in range(6)}
    made = failed(queue, errors)
    other = queue.enqueue({"name": "pending"}).id or 0
    set_times(
        database,
        queue,
        {
            m: (T0 + timedelta(minutes=n), T0 + timedelta(days=1))
            for n, m in enumerate(made.values())
        }
        | {other: (T0, T0)},
    )
    chosen: dict[str, Any] = {
        "error_contains": "timeout",
        "created_after": T0 + timedelta(minutes=1),
    }
    assert ids(queue.messages(**chosen)) == list(made.values())[1:]
    assert ids(queue.messages(status="Error", where='name != "e3"', **chosen)) == [
        made[n] for n in ("e1", "e2", "e4", "e5")
    ]
    assert queue.messages(status="Pending", **chosen) == []
    first = queue.messages(limit=2, order="desc", **chosen)
    assert ids(first) == [made["e5"], made["e4"]]
    rest = queue.messages(limit=10, order="desc", after_id=first[-1].id, **chosen)
    assert ids(rest) == [made["e3"], made["e2"], made["e1"]]


def test_bad_search_input_is_refused_by_name(make_queue: MakeQueue) -> None:
    queue = make_queue()
    with pytest.raises(InvalidInput, match="error_contains"):
        queue.messages(error_contains="")
    with pytest.raises(InvalidInput, match="error_contains"):
        queue.messages(error_contains="x" * 201)
    with pytest.raises(InvalidInput, match="NUL"):
        queue.messages(error_contains="a\x00b")
    with pytest.raises(InvalidInput, match="created_before"):
        queue.messages(created_before=datetime(2026, 1, 1))  # naive on purpose
    assert queue.messages(error_contains="x" * 200) == []
