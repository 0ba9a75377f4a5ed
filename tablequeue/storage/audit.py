"""The audit trail: `tablequeue_audit`, one row per change a person or a tool made through the
API, the admin UI or the CLI (who, via what, when on the database clock, what, to which queue,
the ids or predicate, how many rows). Written by the core's admin operations when an actor is
set (`tablequeue.actor`), read newest first, purged by age by the workers' housekeeping.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import actor
from ..errors import InvalidInput
from ..limits import PURGE_BATCH
from ..models import AuditEntry

if TYPE_CHECKING:
    from .engine import Storage

DEFAULT_KEEP_AUDIT = timedelta(days=90)
"""A quarter: long enough to answer "who retried these last month?"."""
MIN_KEEP_AUDIT = timedelta(days=1)
"""No purge takes younger entries: a worker of any queue purges the whole trail, and one set
to keep it a moment erased every entry."""
MOST_READ = 1000


MAX_TARGET_BYTES = 16_384
"""The most an audit row's target (JSON) holds: MariaDB's TEXT takes 64 KiB, and a change naming
4,000 ids of 19 digits was refused whole for it."""
LISTED_IDS = 100
"""Ids of one change's list kept in a target too long for all of them."""


def record(
    storage: Storage,
    connection: Connection,
    action: str,
    queue: str | None,
    target: dict[str, Any] | None = None,
    rows: int | None = None,
) -> None:
    """Record a change on `connection` (in the change's transaction) if an actor is set."""
    who = actor.current()
    if who is None or not storage.has_audit_table(connection):
        return
    given = {k: v for k, v in (target or {}).items() if v is not None}
    connection.execute(
        sa.insert(storage.audit).values(
            at=storage.dialect.now(),
            who=who.who[:200],
            via=who.via,
            address=(who.address or None) and who.address[:64],
            action=action,
            queue=queue,
            target=_target_text(given) if given else None,
            rows=rows,
        )
    )


def _target_text(given: dict[str, Any]) -> str:
    """The target as stored: its JSON, within `MAX_TARGET_BYTES`. A change naming more ids than
    fit keeps the first `LISTED_IDS` of each list and their number (`truncated`); anything
    else too long keeps its start."""
    text = _json(given)
    if len(text.encode()) <= MAX_TARGET_BYTES:
        return text
    long_lists = {
        k: len(v) for k, v in given.items() if isinstance(v, list) and len(v) > LISTED_IDS
    }
    shown = {k: v[:LISTED_IDS] if k in long_lists else v for k, v in given.items()}
    text = _json(shown | {"truncated": long_lists} if long_lists else shown)
    if len(text.encode()) <= MAX_TARGET_BYTES:
        return text
    start = text.encode()[: MAX_TARGET_BYTES // 2].decode(errors="ignore")
    return _json({"truncated": True, "start": start})


def _json(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def record_in_autocommit(
    storage: Storage,
    action: str,
    queue: str | None,
    target: dict[str, Any] | None = None,
    rows: int | None = None,
) -> None:
    """Record a change made in several transactions (a purge's batches), once it is done."""
    if actor.current() is None:
        return
    with storage.transaction() as connection:
        record(storage, connection, action, queue, target, rows)


def entries(
    storage: Storage,
    *,
    queue: str | None = None,
    before_id: int | None = None,
    limit: int = 100,
) -> list[AuditEntry]:
    """The newest entries first, at most `limit` (1 to 1000), of one queue or all; before
    `before_id` to page back."""
    if not 1 <= limit <= MOST_READ:
        raise ValueError(f"limit must be 1 to {MOST_READ}, not {limit}")
    table = storage.audit
    query = sa.select(table).order_by(table.c.id.desc()).limit(limit)
    if queue is not None:
        query = query.where(table.c.queue == queue)
    if before_id is not None:
        query = query.where(table.c.id < before_id)
    with storage.reading() as connection:
        if not storage.has_audit_table(connection):
            return []
        rows = connection.execute(query).all()
    return [
        AuditEntry(
            id=row.id,
            at=row.at,
            who=row.who,
            via=row.via,
            address=row.address,
            action=row.action,
            queue=row.queue,
            target=json.loads(row.target) if row.target else None,
            rows=row.rows,
        )
        for row in rows
    ]


def purge_older(storage: Storage, keep: timedelta | None, batch: int = PURGE_BATCH) -> int:
    """Delete entries older than `keep` (None: keep forever), `batch` at a time. Any number of
    workers may run it at once: each batch is one statement."""
    if keep is None:
        return 0
    if keep < MIN_KEEP_AUDIT:
        raise InvalidInput(
            f"the audit trail is kept at least {MIN_KEEP_AUDIT.days} day: cannot purge entries "
            f"younger than that ({keep} asked)"
        )
    table, dialect = storage.audit, storage.dialect
    old = table.c.at < dialect.seconds_from_now(sa.literal(-keep.total_seconds()))
    return storage.delete_in_batches(table, old, batch, guard=storage.has_audit_table)
