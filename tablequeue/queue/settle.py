"""Leases and their outcomes: lease, extend, release, complete, fail, in one transaction each."""

from __future__ import annotations

import contextlib
import random
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection

from ..dialects import SettleRequest
from ..errors import InvalidInput
from ..limits import MAX_LEASE_BATCH, MAX_SECONDS
from ..models import Completion, Failure, LeaseBatch, Message, Settled, retry_delay
from ..storage import registry, schedules
from ..storage.borrowed import bare
from . import flow, history
from .context import QueueContext


def lease(
    queue: QueueContext,
    connection: Connection,
    owner: str,
    batch_size: int,
    lease_seconds: float | None,
    correlation_id: str | None,
) -> LeaseBatch:
    """Take up to `batch_size` due messages: highest priority, then oldest (none while the
    queue is paused, at most what its global concurrency and rate limit allow)."""
    leased = _lease(queue, connection, owner, batch_size, lease_seconds, correlation_id, False)
    assert leased is not None
    return leased


def settle_and_lease(
    queue: QueueContext,
    owner: str,
    outcomes: Sequence[Completion | Failure],
    batch_size: int,
    lease_seconds: float | None,
) -> tuple[Settled, LeaseBatch]:
    """Record outcomes and lease the next batch: a worker's cycle, in one transaction.

    Where a statement can be its own transaction (`Storage.statements_in_autocommit`:
    PostgreSQL without a transaction pooler's per-transaction setup), a cycle of completions on
    a queue without flow controls is its statements in autocommit instead: no BEGIN and no
    COMMIT, two round trips instead of four. Each statement is atomic, and nothing ties the
    outcomes to the next lease. The lease runs first, so that an error leaves nothing recorded,
    as a transaction's rollback would: what the lease took is given back when the outcomes fail
    for a reason of their own, and a lost connection leaves it to the caller's recovery of
    untracked leases (`release_untracked`), as a lease whose commit went unanswered does.
    Failures keep the transaction, which writes their attempts with them; a queue found to have
    flow controls settles and leases in a transaction (its row locks need one).
    """
    storage = queue.storage
    autocommit = storage.statements_in_autocommit and not queue.flow.controlled
    if autocommit and not any(isinstance(o, Failure) for o in outcomes):
        with storage.autocommit() as dbapi_connection:
            connection = bare(storage.engine, dbapi_connection)
            batch = _lease(queue, connection, owner, batch_size, lease_seconds, None, True)
            if batch is not None:
                return _settle_after(queue, connection, owner, outcomes, batch), batch

    def in_one(connection: Connection) -> tuple[Settled, LeaseBatch]:
        settled = settle(queue, connection, owner, outcomes)
        return settled, lease(queue, connection, owner, batch_size, lease_seconds, None)

    return storage.in_transaction(in_one)


def _settle_after(
    queue: QueueContext,
    connection: Connection,
    owner: str,
    outcomes: Sequence[Completion | Failure],
    batch: LeaseBatch,
) -> Settled:
    """Record outcomes after their cycle's lease committed; if they fail, the lease's messages
    go back (Pending, attempt not counted) before the error is raised."""
    try:
        return settle(queue, connection, owner, outcomes)
    except Exception:
        ids = [m.id for m in batch.messages]
        if ids:
            with contextlib.suppress(Exception):  # the connection is gone: the caller recovers
                queue.dialect.release(connection, queue.queries, owner=owner, ids=ids)
        raise


def _lease(
    queue: QueueContext,
    connection: Connection,
    owner: str,
    batch_size: int,
    lease_seconds: float | None,
    correlation_id: str | None,
    autocommit: bool,
) -> LeaseBatch | None:
    """`lease`; `autocommit`: on a connection in autocommit (`flow.lease_in_autocommit`), None
    when the queue has flow controls."""
    if not 1 <= batch_size <= MAX_LEASE_BATCH:
        raise InvalidInput(f"batch size {batch_size} out of range 1..{MAX_LEASE_BATCH}")
    correlation_id = correlation_id or uuid.uuid4().hex
    leaser = flow.lease_in_autocommit if autocommit else flow.lease_rows
    leased = leaser(
        queue,
        connection,
        owner=owner,
        batch_size=batch_size,
        lease_seconds=lease_seconds_of(queue, lease_seconds),
        correlation_id=correlation_id,
    )
    if leased is None:
        return None
    messages = sorted(
        (Message(*row) for row in leased.rows), key=lambda m: (-m.priority, m.process_after, m.id)
    )
    return LeaseBatch(
        correlation_id,
        owner,
        messages,
        leased.paused,
        leased.throttled_for,
        leased.at_concurrency_limit,
    )


def lease_seconds_of(queue: QueueContext, lease_seconds: float | None) -> float:
    """The lease asked for, or the queue's; validated."""
    seconds = float(lease_seconds if lease_seconds is not None else queue.spec.lease_seconds)
    if not 0 < seconds <= MAX_SECONDS:
        raise InvalidInput(f"lease of {seconds:g}s out of range: more than 0, at most 100 years")
    return seconds


def extend(
    queue: QueueContext, owner: str, ids: Iterable[int], lease_seconds: float | None
) -> set[int]:
    ids = list(ids)
    if not ids:
        return set()
    seconds = lease_seconds_of(queue, lease_seconds)
    with queue.storage.transaction() as connection:
        return queue.dialect.extend(
            connection, queue.queries, owner=owner, ids=ids, lease_seconds=seconds
        )


def held(queue: QueueContext, owner: str, ids: Iterable[int]) -> set[int]:
    ids = list(ids)
    if not ids:
        return set()
    with queue.storage.transaction() as connection:
        return queue.dialect.held(connection, queue.queries, owner=owner, ids=ids)


def release(queue: QueueContext, owner: str, ids: Iterable[int]) -> int:
    ids = list(ids)
    if not ids:
        return 0
    with queue.storage.transaction() as connection:
        return queue.dialect.release(connection, queue.queries, owner=owner, ids=ids)


def release_untracked(
    queue: QueueContext, owner: str, tracked: Iterable[int], since: datetime
) -> int:
    with queue.storage.transaction() as connection:
        return queue.dialect.release_untracked(
            connection, queue.queries, owner=owner, tracked=sorted(set(tracked)), since=since
        )


def clock(queue: QueueContext) -> datetime:
    with queue.storage.transaction() as connection:
        return schedules.database_now(connection, queue.dialect)


def settle(
    queue: QueueContext,
    connection: Connection,
    owner: str,
    outcomes: Sequence[Completion | Failure],
) -> Settled:
    """Record completions and failures together."""
    completions = [o for o in outcomes if isinstance(o, Completion)]
    failures = [o for o in outcomes if isinstance(o, Failure)]
    settled = Settled()
    if completions:
        settled = complete(queue, connection, owner, completions)
    if failures:
        settled = settled + fail(queue, connection, owner, failures)
    return settled


def complete(
    queue: QueueContext, connection: Connection, owner: str, completions: Sequence[Completion]
) -> Settled:
    """Record successes: delete, mark Processed, or reschedule (`process_again_at`)."""
    dialect, queries = queue.dialect, queue.queries
    settled = Settled()
    keep = queue.spec.keep_processed != timedelta(0)
    deleted = [c for c in completions if not c.process_again_at and not keep]
    processed = [c for c in completions if not c.process_again_at and keep]
    again = [c for c in completions if c.process_again_at]
    results = history.keeps_results(queue)
    if deleted and results:
        settled.deleted = history.complete_recording(
            queue, connection, owner, deleted, _finished(deleted), delete=True
        )
    elif deleted:
        rows = [_held(c.message) for c in deleted]
        settled.deleted = dialect.finish(connection, queries, "delete", SettleRequest(owner, rows))
    if processed and results:
        settled.processed = history.complete_recording(
            queue, connection, owner, processed, _finished(processed), delete=False
        )
    elif processed:
        finished = SettleRequest(owner, _finished(processed))
        settled.processed = dialect.finish(connection, queries, "processed", finished)
    if again:
        rescheduled = SettleRequest(owner, _finished(again))
        settled.rescheduled = dialect.finish(connection, queries, "again", rescheduled)
    settled_count = settled.deleted + settled.processed + settled.rescheduled
    if settled_count < len(completions):  # rare: a new version arrived, or a lease was lost
        newer = [_held(c.message) | {"b_previous": c.message.message} for c in completions]
        settled.requeued_newer_version = _requeue_newer(queue, connection, newer, owner, True)
    settled.lease_lost = len(completions) - (settled_count + settled.requeued_newer_version)
    return settled


def fail(
    queue: QueueContext, connection: Connection, owner: str, failures: Sequence[Failure]
) -> Settled:
    """Record failures: retry after the back-off, or Error once attempts reach maxAttempts."""
    settled = Settled()
    spec = queue.spec
    retry = spec.retry
    rows = []
    for f in failures:
        delay = retry_delay(
            f.message.attempts, retry.delay_seconds, retry.backoff, retry.max_delay_seconds
        )
        delay *= 1 + retry.jitter * (2 * random.random() - 1)
        give_up = f.permanent or f.message.attempts >= spec.max_attempts
        rows.append(
            _held(f.message)
            | {"b_error": _storable(f.error), "b_give_up": give_up, "b_delay": round(delay, 3)}
        )
        if give_up:
            settled.errored += 1
        else:
            settled.retrying += 1
    failed = (
        queue.dialect.fail(connection, queue.queries, SettleRequest(owner, rows)) if rows else 0
    )
    recorded = [
        (f.message, row["b_error"], row["b_give_up"]) for f, row in zip(failures, rows, strict=True)
    ]
    history.record_failures(queue, connection, owner, recorded, failed)
    if failed < len(failures):  # rare: a new version arrived, or a lease was lost
        newer = [_held(f.message) | {"b_previous": None} for f in failures]
        settled.requeued_newer_version = _requeue_newer(queue, connection, newer, owner, False)
    settled.lease_lost = len(failures) - failed - settled.requeued_newer_version
    if settled.lease_lost or settled.requeued_newer_version:
        # Counts of retrying/errored are only certain when every row was still ours.
        settled.retrying = settled.errored = 0
    return settled


def _requeue_newer(
    queue: QueueContext,
    connection: Connection,
    rows: list[dict[str, Any]],
    owner: str,
    completed: bool,
) -> int:
    """Rows still leased by us at another version got a new body while we worked on it."""
    if not rows:
        return 0
    return queue.dialect.requeue_newer(
        connection,
        queue.queries,
        SettleRequest(owner, rows),
        default_status=registry.default_status(queue.storage, connection, queue.name),
        completed=completed,
    )


def _held(message: Message) -> dict[str, Any]:
    """Identify the lease an outcome belongs to: the row, its version and the lease batch
    (a message leased again later, even by the same worker, belongs to another batch)."""
    return {"b_id": message.id, "b_version": message.version, "b_cid": message.correlation_id}


def _finished(completions: Sequence[Completion]) -> list[dict[str, Any]]:
    return [
        _held(c.message)
        | {"b_again": c.process_again_at, "b_result": c.result, "b_progress": c.progress}
        for c in completions
    ]


def _storable(text: str) -> str:
    """Error text as every engine stores it: NUL and unpaired surrogates escaped."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")
