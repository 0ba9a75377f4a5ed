"""Columns to messages: which columns form what, and one row's NewMessage or why it is rejected.

The Spark side (`MessageColumns.prepared`) turns any source row into eight plain columns in the
JVM (the body as JSON text with `to_json`, times as ISO text in UTC); the Python side
(`new_message`) turns those into a validated NewMessage, or says why the row is rejected.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from tablequeue import NewMessage
from tablequeue.errors import InvalidInput

BODY = "tq_body"
MESSAGE_ID = "tq_message_id"
AT = "tq_at"
AT_GIVEN = "tq_at_given"
HEADERS = "tq_headers"
PRIORITY = "tq_priority"
CORRELATION_ID = "tq_correlation_id"
LABEL = "tq_label"
PREPARED = (BODY, MESSAGE_ID, AT, AT_GIVEN, HEADERS, PRIORITY, CORRELATION_ID, LABEL)
"""The columns `new_message` reads, in its argument order."""

_ISO_UTC = "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"


class RowRejected(ValueError):
    """A source row that cannot become a message; the text is the reason shown in rejects."""


@dataclass(frozen=True)
class MessageColumns:
    """Which source columns form the message.

    The body is `json_column` (JSON text, taken as is) or an object of `body_columns` (every
    column when empty). `id_column` is the messageId (every row then needs one), `schedule_column`
    a time (timestamp or text with an offset) before which it is not processed, `header_columns`
    go into the headers object, `priority_column` (`priority` where it is empty) orders leasing,
    `correlation_column` and `label_column` give the caller's correlation id and label (empty:
    none). A value that is not a time or not a number, or a malformed correlation id or label,
    rejects the row.
    """

    body_columns: tuple[str, ...] = ()
    json_column: str | None = None
    id_column: str | None = None
    schedule_column: str | None = None
    header_columns: tuple[str, ...] = ()
    priority_column: str | None = None
    priority: int = 0
    status: str | None = None
    correlation_column: str | None = None
    label_column: str | None = None

    def prepared(self, frame: DataFrame) -> DataFrame:
        """The source with the PREPARED columns added (its own columns stay, for rejects)."""
        self._check_columns(frame)
        if self.json_column is not None:
            body = F.col(self.json_column).cast("string")
        else:
            names = self.body_columns or tuple(frame.columns)
            body = F.to_json(F.struct(*[F.col(n) for n in names]), {"ignoreNullFields": "false"})
        added: dict[str, Column] = {
            BODY: body,
            MESSAGE_ID: _text_or_null(self.id_column),
            AT: (
                F.date_format(F.col(self.schedule_column).try_cast("timestamp"), _ISO_UTC)
                if self.schedule_column
                else F.lit(None).cast("string")
            ),
            AT_GIVEN: (
                F.col(self.schedule_column).isNotNull() if self.schedule_column else F.lit(False)
            ),
            HEADERS: (
                F.to_json(F.struct(*[F.col(n) for n in self.header_columns]))
                if self.header_columns
                else F.lit(None).cast("string")
            ),
            PRIORITY: (
                F.when(F.col(self.priority_column).isNull(), F.lit(self.priority)).otherwise(
                    F.col(self.priority_column).try_cast("int")
                )
                if self.priority_column
                else F.lit(self.priority)
            ),
            CORRELATION_ID: _text_or_null(self.correlation_column),
            LABEL: _text_or_null(self.label_column),
        }
        return frame.withColumns(added)

    def _check_columns(self, frame: DataFrame) -> None:
        named = [
            *self.body_columns,
            *self.header_columns,
            *(c for c in (self.json_column, self.id_column) if c),
            *(c for c in (self.schedule_column, self.priority_column) if c),
            *(c for c in (self.correlation_column, self.label_column) if c),
        ]
        missing = [name for name in named if name not in frame.columns]
        if missing:
            raise InvalidInput(
                f"no column {', '.join(map(repr, missing))} in the source; it has "
                f"{', '.join(frame.columns)}"
            )
        if self.json_column and self.body_columns:
            raise InvalidInput("give either body columns or a JSON column, not both")


def _text_or_null(name: str | None) -> Column:
    return F.col(name).cast("string") if name else F.lit(None).cast("string")


def new_message(
    columns: MessageColumns,
    body: str | None,
    message_id: str | None,
    at: str | None,
    at_given: bool,
    headers: str | None,
    priority: int | None,
    correlation_id: str | None,
    label: str | None,
) -> NewMessage:
    """One prepared row as a NewMessage; RowRejected says why it cannot be one."""
    if body is None:
        raise RowRejected("body is null")
    try:
        message: Any = json.loads(body)
    except ValueError as error:
        raise RowRejected(f"body is not valid JSON: {error}") from None
    if columns.id_column is not None and (message_id is None or not message_id.strip()):
        raise RowRejected(f"messageId (column {columns.id_column!r}) is empty")
    if at_given and at is None:
        raise RowRejected(f"schedule (column {columns.schedule_column!r}) is not a time")
    if priority is None:
        raise RowRejected(f"priority (column {columns.priority_column!r}) is not a number")
    try:
        return NewMessage(
            message=message,
            message_id=message_id,
            at=datetime.fromisoformat(at) if at is not None else None,
            priority=priority,
            status=columns.status,
            headers=json.loads(headers) if headers is not None else None,
            correlation_id=correlation_id or None,
            label=label or None,
        )
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in problem['loc']) or 'message'}: {problem['msg']}"
            for problem in error.errors()
        )
        raise RowRejected(problems) from None
    except InvalidInput as error:
        raise RowRejected(str(error)) from None
