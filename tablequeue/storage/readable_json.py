"""JSON text as the user wrote it in tables made by an older tablequeue (schema version 5).

Up to version 4, engines that store JSON as text (SQLite, MariaDB, SQL Server) held it with every
non-ASCII character escaped (`models.escaped_json`: `M\\u00fcller`), so a plain SELECT did not
show it. `rewrite_table` (run by `apply` while a table is older than version 5) rewrites such
values as `canonical_json` writes them, on a live table: batches of rows by id, each in a short
transaction of its own, each value rewritten only while it still holds the text that was read
(a value changed meanwhile is left as it now is). It is idempotent: a second run rewrites nothing,
and a run cut short is finished by the next apply (the registry records version 5 only after).

Until a row is rewritten, an idempotent enqueue would see its escaped text as another body:
`adopt_same_bodies` first rewrites the rows of the batch's messageIds whose text is the escaped
text of the new body, so an unchanged body still counts as unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..dialects import Dialect
from ..dialects.queries import Queries
from ..models import NewMessage, canonical_json, escaped_json, message_columns
from .engine import Storage

JSON_COLUMNS = tuple(name for name, spec in message_columns() if spec.type == "json")
"""A queue table's JSON columns: message, previous_message, headers, result, progress."""
BATCH_ROWS = 500
"""Rows read (and rewritten) per transaction."""


def escaped_rows(dialect: Dialect, table: sa.Table, batch_rows: int = BATCH_ROWS) -> sa.Select[Any]:
    """The next `batch_rows` rows after id :b_after holding a JSON escape (`\\u`) in any JSON
    column, with the text of each (the filter runs in the database: other rows never travel)."""
    texts = [dialect.json_text(table.c[name]).label(name) for name in JSON_COLUMNS]
    escaped = sa.or_(*(text.contains("\\u", autoescape=True) for text in texts))
    after = sa.bindparam("b_after", type_=sa.BigInteger())
    return (
        sa.select(table.c.id, *texts)
        .where(table.c.id > after, escaped)
        .order_by(table.c.id)
        .limit(batch_rows)
    )


def rewrite_value(dialect: Dialect, table: sa.Table, column: str) -> sa.Update:
    """Set `column` of row :b_id to :b_new while it still holds the text :b_old."""
    still = dialect.json_text(table.c[column]) == sa.bindparam("b_old", type_=sa.Text())
    return (
        sa.update(table)
        .where(table.c.id == sa.bindparam("b_id", type_=sa.BigInteger()), still)
        .values({column: sa.bindparam("b_new", type_=table.c[column].type)})
    )


def rewrite_table(storage: Storage, table: sa.Table, batch_rows: int = BATCH_ROWS) -> int:
    """Rewrite every escaped JSON value of `table` as written; the number of values found
    escaped (each rewritten unless it changed meanwhile), 0 on engines that do not store JSON as
    text."""
    dialect = storage.dialect
    if not dialect.capabilities.stores_json_text:
        return 0
    read = escaped_rows(dialect, table, batch_rows)
    rewrites = {name: rewrite_value(dialect, table, name) for name in JSON_COLUMNS}
    after, rewritten = 0, 0
    while True:
        with storage.transaction() as connection:
            rows = connection.execute(read, {"b_after": after}).all()
            for name in JSON_COLUMNS:
                changes = [
                    {"b_id": row.id, "b_old": text, "b_new": value}
                    for row in rows
                    if (text := row._mapping[name]) is not None
                    and (value := _readable(text)) is not _UNCHANGED
                ]
                if changes:
                    connection.execute(rewrites[name], changes)
                    rewritten += len(changes)
        if len(rows) < batch_rows:
            return rewritten
        after = rows[-1].id


_UNCHANGED = object()


def _readable(text: str) -> Any:
    """The value of `text` when it is exactly what tablequeue wrote before version 5 and reads
    otherwise as written; else `_UNCHANGED`: text already readable, written by someone else
    (rewriting it could change more than its escapes, e.g. how a number is written), or holding
    an unpaired surrogate, which only an escape can store."""
    try:
        value = json.loads(text)
        readable = canonical_json(value)
        readable.encode("utf-8")
    except ValueError:  # UnicodeEncodeError included
        return _UNCHANGED
    if escaped_json(value) != text or readable == text:
        return _UNCHANGED
    return value


def adopt_same_bodies(
    connection: Connection, dialect: Dialect, queries: Queries, messages: Sequence[NewMessage]
) -> None:
    """Rewrite as written the stored bodies of `messages`' messageIds that are the same body
    escaped, before an idempotent enqueue compares texts (one statement; none when every body
    is ASCII, so that both texts are the same)."""
    if not dialect.capabilities.stores_json_text:
        return
    rows = []
    for new in messages:
        if new.message_id is None:
            continue
        if canonical_json(new.message).isascii():
            continue
        old = escaped_json(new.message)
        rows.append({"b_message_id": new.message_id, "b_old": old, "b_new": new.message})
    if rows:
        statement, per_row = queries.adopt_escaped_bodies()
        connection.execute(statement, per_row.params(rows))
