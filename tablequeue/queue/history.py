"""Job history beside the outcomes: results of finished messages (`keepResultsFor`) and the
attempts that failed or lost their lease, written in the transaction of the outcome.

A result is the final outcome of a message as the worker settled it: Processed (with the
handler's result) or Error (with the error). A message rescheduled by `processAgainAt`, or
failing with retries left, has no final outcome yet. An attempt is appended for each failure
and each lease the sweep settles (Abandoned, or retried/Error under `onLeaseExpired: Retry`),
the newest `ATTEMPTS_KEPT` per message.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..dialects.queries.history import HistoryQueries
from ..models import Attempt, Completion, Message, StoredResult
from ..storage import Storage
from ..storage.history import ERROR_LENGTH
from .context import QueueContext

FAILURE = "failure"
LEASE_EXPIRED = "lease-expired"


def statements(storage: Storage, queue: QueueContext) -> HistoryQueries:
    """The history statements of the queue's table, built once per table and database."""
    cache: dict[str, HistoryQueries] = storage.__dict__.setdefault("_history_statements", {})
    found = cache.get(queue.table.name)
    if found is None:
        found = cache[queue.table.name] = HistoryQueries(
            storage.dialect, queue.queries, storage.history
        )
    return found


def keeps_results(queue: QueueContext) -> bool:
    return queue.spec.keep_results != timedelta(0)


def complete_recording(
    queue: QueueContext,
    connection: Connection,
    owner: str,
    completions: Sequence[Completion],
    rows: list[dict[str, Any]],
    delete: bool,
) -> int:
    """Finish successes (delete the rows, or mark them Processed) and record their results;
    the number finished."""
    history = statements(queue.storage, queue)
    if queue.dialect.capabilities.folds_writes:
        statement, per_row = history.finish_and_record(delete)
        parameters = per_row.params(rows, {"b_owner": owner, "b_queue": queue.name})
        assert isinstance(parameters, dict)  # engines that fold writes take one document
        return len(queue.dialect.hot_rows(connection, queue.queries, statement, parameters))
    messages = [c.message for c in completions]
    results = {c.message.id: c.result for c in completions}
    if delete:
        deleting, per_row = queue.queries.delete_done()
        parameters = per_row.params(rows, {"b_owner": owner})
        count = int(connection.execute(deleting, parameters).rowcount)
        ours = messages
        if 0 < count < len(messages):  # rare: the rows still there were not ours to delete
            ids = {"b_ids": [m.id for m in messages]}
            left = set(connection.execute(history.present_ids(), ids).scalars())
            ours = [m for m in messages if m.id not in left]
    else:
        marked, per_row = queue.queries.mark_processed()
        parameters = per_row.params(rows, {"b_owner": owner})
        count = int(connection.execute(marked, parameters).rowcount)
        ours = _settled_by_us(history, connection, owner, messages, count, _processed)
    if count:
        outcomes = [(m, "Processed", results[m.id], m.last_error) for m in ours]
        write_results(queue, connection, outcomes)
    return count


def _processed(_message: Message, row: Any) -> bool:
    return bool(row.status == "Processed")


def record_failures(
    queue: QueueContext,
    connection: Connection,
    owner: str,
    failed: Sequence[tuple[Message, str, bool]],
    count: int,
) -> None:
    """After failures (message, stored error text, gave up) were recorded, `count` of them
    still held: append their attempts, and the results of those that went to Error."""
    if not count:
        return
    history = statements(queue.storage, queue)
    errors = {m.id: (error, gave_up) for m, error, gave_up in failed}
    messages = [m for m, _, _ in failed]

    def same_error(message: Message, row: Any) -> bool:
        return bool(row.last_error == errors[message.id][0])

    ours = _settled_by_us(history, connection, owner, messages, count, same_error)
    write_attempts(
        queue,
        connection,
        [(m, FAILURE, m.lease_owner or owner, errors[m.id][0]) for m in ours],
    )
    if keeps_results(queue):
        gave_up = [(m, "Error", None, errors[m.id][0]) for m in ours if errors[m.id][1]]
        write_results(queue, connection, gave_up)


def _settled_by_us(
    history: HistoryQueries,
    connection: Connection,
    owner: str,
    messages: Sequence[Message],
    count: int,
    matches: Callable[[Message, Any], bool],
) -> list[Message]:
    """The messages whose outcome this transaction recorded: all of them when the count says
    so, else those whose rows show it (rows this transaction wrote stay locked by it)."""
    if count >= len(messages):
        return list(messages)
    parameters = {"b_ids": [m.id for m in messages], "b_owner": owner}
    rows = {
        (row.id, row.correlation_id): row
        for row in connection.execute(history.settled_rows(), parameters)
    }
    return [
        m
        for m in messages
        if (row := rows.get((m.id, m.correlation_id))) is not None and matches(m, row)
    ]


def write_results(
    queue: QueueContext,
    connection: Connection,
    outcomes: Sequence[tuple[Message, str, Any, str | None]],
) -> None:
    """Upsert results: (message, final status, result, last error) each."""
    if not outcomes:
        return
    history = statements(queue.storage, queue)
    insert, upserts = history.write_results()
    if not upserts:
        tracking = [m.tracking_id for m, _, _, _ in outcomes]
        connection.execute(history.forget_results(), {"b_tracking": tracking})
    connection.execute(
        insert,
        [
            {
                "r_tracking_id": m.tracking_id,
                "r_queue": queue.name,
                "r_message_pk": m.id,
                "r_message_id": m.message_id,
                "r_status": status,
                "r_result": result,
                "r_last_error": error,
                "r_attempts": m.attempts,
            }
            for m, status, result, error in outcomes
        ],
    )


def write_attempts(
    queue: QueueContext,
    connection: Connection,
    attempts: Sequence[tuple[Any, str, str | None, str | None]],
) -> None:
    """Append attempts: (message or swept lease, kind, owner, error) each; then keep the
    newest ATTEMPTS_KEPT of each of these messages."""
    if not attempts:
        return
    history = statements(queue.storage, queue)
    connection.execute(
        history.write_attempts(),
        [
            {
                "a_queue": queue.name,
                "a_tracking_id": m.tracking_id,
                "a_message_pk": m.id,
                "a_attempt": m.attempts,
                "a_kind": kind,
                "a_owner": owner,
                "a_correlation_id": m.correlation_id,
                "a_error": None if error is None else error[:ERROR_LENGTH],
            }
            for m, kind, owner, error in attempts
        ],
    )
    tracking = sorted({m.tracking_id for m, _, _, _ in attempts})
    connection.execute(history.trim_attempts(), {"b_tracking": tracking})


# --- reading -------------------------------------------------------------------------------


def attempts_of(storage: Storage, tracking_id: uuid.UUID) -> list[Attempt]:
    """The recorded attempts of a message, oldest first."""
    a = storage.history.attempts
    statement = (
        sa.select(a.c.attempt, a.c.kind, a.c.at, a.c.owner, a.c.correlation_id, a.c.error)
        .where(a.c.tracking_id == tracking_id)
        .order_by(a.c.id)
    )
    with storage.transaction() as connection:
        if not _exists(connection, a):
            return []
        return [Attempt(*row) for row in connection.execute(statement)]


def stored_result(storage: Storage, tracking_id: uuid.UUID) -> StoredResult | None:
    """The kept outcome of a finished message, or None."""
    r = storage.history.results
    statement = sa.select(
        r.c.queue,
        r.c.tracking_id,
        r.c.message_pk,
        r.c.message_id,
        r.c.status,
        r.c.result,
        r.c.last_error,
        r.c.attempts,
        r.c.processed_at,
    ).where(r.c.tracking_id == tracking_id)
    with storage.transaction() as connection:
        if not _exists(connection, r):
            return None
        row = connection.execute(statement).first()
    return None if row is None else StoredResult(*row)


def _exists(connection: Connection, table: sa.Table) -> bool:
    """A database whose queues were applied by an older tablequeue has no history tables
    until `queue apply` (or the operator) runs again."""
    return sa.inspect(connection).has_table(table.name)
