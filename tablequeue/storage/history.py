"""The shared tables of job history (laid out in `schema.py`): created with the registry, and
how much of an error text an attempt keeps."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from .schema import HistoryTables

ERROR_LENGTH = 2000
"""Characters of an error text an attempt keeps (the message's own `last_error` keeps all)."""


def ensure_history(connection: Connection, tables: HistoryTables) -> None:
    """Create the history tables where missing (idempotent; under the registry's DDL lock)."""
    for table in tables.all():
        table.create(connection, checkfirst=True)
