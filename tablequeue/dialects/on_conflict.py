"""Upserts written `INSERT ... ON CONFLICT (key) DO UPDATE`, the way PostgreSQL and SQLite (3.24
and later) both take them: one statement, no delete first. Their engine packages subclass
`OnConflictDialect` and supply only `insert`, SQLAlchemy's insert of their own engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import Insert as PostgresInsert
from sqlalchemy.dialects.sqlite import Insert as SqliteInsert
from sqlalchemy.sql.dml import Insert

from .dialect import Dialect


def _conflicting(insert: Insert) -> PostgresInsert | SqliteInsert:
    assert isinstance(insert, PostgresInsert | SqliteInsert), "an ON CONFLICT engine's insert"
    return insert


class OnConflictDialect(Dialect):
    def excluded(self, insert: Insert) -> Any:
        return _conflicting(insert).excluded

    def on_conflict_message_id(
        self, insert: Insert, set_: dict[str, Any], where: sa.ColumnElement[bool] | None
    ) -> Insert:
        return _conflicting(insert).on_conflict_do_update(
            index_elements=["message_id"],
            index_where=insert.table.c.message_id.is_not(None),
            set_=set_,
            where=where,
        )

    def keep_message_id(self, insert: Insert) -> Insert:
        return _conflicting(insert).on_conflict_do_nothing(
            index_elements=["message_id"], index_where=insert.table.c.message_id.is_not(None)
        )

    def upsert_on_key(self, insert: Insert, key: str, columns: Sequence[str]) -> Insert | None:
        """Differs because ON CONFLICT (key) DO UPDATE makes the upsert one statement, with no
        delete first."""
        conflicting = _conflicting(insert)
        return conflicting.on_conflict_do_update(
            index_elements=[key], set_={c: conflicting.excluded[c] for c in columns}
        )

    def upsert(
        self, table: sa.Table, key: Sequence[str], values: dict[str, Any], update: Sequence[str]
    ) -> sa.Executable:
        insert = _conflicting(self.insert(table).values(**values))
        set_ = {column: insert.excluded[column] for column in update}
        return insert.on_conflict_do_update(index_elements=list(key), set_=set_)

    def on_conflict_key(self, insert: Insert, set_: dict[str, Any]) -> Insert:
        table = insert.table
        assert isinstance(table, sa.Table)
        keys = [column.name for column in table.primary_key.columns]
        return _conflicting(insert).on_conflict_do_update(index_elements=keys, set_=set_)
