"""The shared tables of job history, one set per database: results that outlive their message
(`tablequeue_results`), the last attempts of each message (`tablequeue_attempts`) and the
housekeeping lease that lets one worker at a time purge a queue (`tablequeue_housekeeping`).

Rows name their queue; nothing here is per queue table, so the names are fixed (validated
constants, quoted by SQLAlchemy like every identifier)."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from ..limits import ATTEMPTS_KEPT
from .schema import HistoryTables, history_tables

__all__ = ["ATTEMPTS_KEPT", "ERROR_LENGTH", "HistoryTables", "ensure_history", "history_tables"]

ERROR_LENGTH = 2000
"""Characters of an error text an attempt keeps (the message's own `last_error` keeps all)."""


def ensure_history(connection: Connection, tables: HistoryTables) -> None:
    """Create the history tables where missing (idempotent; under the registry's DDL lock)."""
    for table in tables.all():
        table.create(connection, checkfirst=True)
