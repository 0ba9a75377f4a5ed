"""The SQL statements a database runs meanwhile, as its driver receives them: SQLAlchemy's
cursor events, and on PostgreSQL psycopg's cursors themselves (tablequeue runs the worker's hot
statements on psycopg directly, where SQLAlchemy's events do not see them). Texts are lowercase
with their whitespace collapsed; transaction control and pings are left out."""

from __future__ import annotations

from typing import Any

import psycopg
import sqlalchemy as sa

from tablequeue import Database

CONTROL = ("begin", "commit", "rollback", "select 1")


class StatementsRun:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.texts: list[str] = []
        self._psycopg = database.dialect.name == "postgresql"
        self._original: Any = None

    def __enter__(self) -> list[str]:
        if self._psycopg:  # sees SQLAlchemy's statements too: they reach the same cursors
            self._original = original = psycopg.Cursor.execute

            def execute(cursor: psycopg.Cursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
                self._seen(query if isinstance(query, str) else str(query))
                return original(cursor, query, *args, **kwargs)

            psycopg.Cursor.execute = execute  # type: ignore[method-assign,assignment]
        else:
            sa.event.listen(self.database.engine, "before_cursor_execute", self._seen_by_event)
        return self.texts

    def __exit__(self, *_: object) -> None:
        if self._psycopg:
            psycopg.Cursor.execute = self._original  # type: ignore[method-assign]
        else:
            sa.event.remove(self.database.engine, "before_cursor_execute", self._seen_by_event)

    def _seen_by_event(
        self, _connection: object, _cursor: object, statement: str, *_: object
    ) -> None:
        self._seen(statement)

    def _seen(self, statement: str) -> None:
        text = " ".join(statement.split()).lower()
        if not text.startswith(CONTROL):
            self.texts.append(text)
