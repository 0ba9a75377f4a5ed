"""The shared tables of job history, one set per database: results that outlive their message
(`tablequeue_results`), the last attempts of each message (`tablequeue_attempts`) and the
housekeeping lease that lets one worker at a time purge a queue (`tablequeue_housekeeping`).

Rows name their queue; nothing here is per queue table, so the names are fixed (validated
constants, quoted by SQLAlchemy like every identifier)."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..dialects import Dialect
from ..limits import ATTEMPTS_KEPT, MAX_MESSAGE_ID_LENGTH
from ..sqltypes import UtcDateTime

RESULTS_TABLE = "tablequeue_results"
ATTEMPTS_TABLE = "tablequeue_attempts"
HOUSEKEEPING_TABLE = "tablequeue_housekeeping"
QUEUE_NAME_LENGTH = 63
__all__ = ["ATTEMPTS_KEPT", "HistoryTables", "ensure_history", "history_tables"]
OWNER_LENGTH = 200
CORRELATION_LENGTH = 100
ERROR_LENGTH = 2000
"""Characters of an error text an attempt keeps (the message's own `last_error` keeps all)."""


@dataclass(frozen=True)
class HistoryTables:
    results: sa.Table
    attempts: sa.Table
    housekeeping: sa.Table

    def all(self) -> list[sa.Table]:
        return [self.results, self.attempts, self.housekeeping]


def history_tables(metadata: sa.MetaData, dialect: Dialect) -> HistoryTables:
    results = sa.Table(
        RESULTS_TABLE,
        metadata,
        sa.Column("tracking_id", sa.Uuid(), primary_key=True),
        sa.Column("queue", sa.String(QUEUE_NAME_LENGTH), nullable=False),
        sa.Column("message_pk", sa.BigInteger(), nullable=False),
        sa.Column("message_id", sa.String(MAX_MESSAGE_ID_LENGTH), nullable=True),
        sa.Column("status", sa.String(64), nullable=False),
        sa.Column("result", dialect.json_type, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("processed_at", UtcDateTime(), nullable=False),
        **dialect.table_options(),
    )
    sa.Index("tablequeue_results_queue_processed", results.c.queue, results.c.processed_at)
    attempts = sa.Table(
        ATTEMPTS_TABLE,
        metadata,
        dialect.id_column(),
        sa.Column("queue", sa.String(QUEUE_NAME_LENGTH), nullable=False),
        sa.Column("tracking_id", sa.Uuid(), nullable=False),
        sa.Column("message_pk", sa.BigInteger(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("at", UtcDateTime(), nullable=False),
        sa.Column("owner", sa.String(OWNER_LENGTH), nullable=True),
        sa.Column("correlation_id", sa.String(CORRELATION_LENGTH), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        **dialect.table_options(),
    )
    sa.Index("tablequeue_attempts_tracking", attempts.c.tracking_id, attempts.c.id)
    sa.Index("tablequeue_attempts_queue", attempts.c.queue, attempts.c.id)
    housekeeping = sa.Table(
        HOUSEKEEPING_TABLE,
        metadata,
        sa.Column("queue", sa.String(QUEUE_NAME_LENGTH), primary_key=True),
        sa.Column("owner", sa.String(OWNER_LENGTH), nullable=True),
        sa.Column("lease_expires_at", UtcDateTime(), nullable=True),
        sa.Column("purged_at", UtcDateTime(), nullable=True),
        **dialect.table_options(),
    )
    return HistoryTables(results, attempts, housekeeping)


def ensure_history(connection: Connection, tables: HistoryTables) -> None:
    """Create the history tables where missing (idempotent; under the registry's DDL lock)."""
    for table in tables.all():
        table.create(connection, checkfirst=True)
