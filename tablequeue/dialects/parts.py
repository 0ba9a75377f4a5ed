"""The SQL fragments an engine supplies: the clock, JSON paths, upserts, the locking hint, the
per-row source. The shared statements (`queries/`),
the predicate compiler and the JSON index strategies are built from these alone; `Dialect`
extends them with whole operations.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.selectable import Select

from .types import JsonKind, JsonPath


class SqlParts(abc.ABC):
    name: str
    """The SQLAlchemy backend name of the engine (`postgresql`, `sqlite`, `mariadb`, `mssql`)."""

    # --- values -----------------------------------------------------------------------------

    @abc.abstractmethod
    def now(self) -> sa.ColumnElement[datetime]:
        """The database's current time, in the same representation the timestamp columns use."""

    @abc.abstractmethod
    def seconds_from_now(self, seconds: sa.ColumnElement[Any]) -> sa.ColumnElement[datetime]:
        """now() plus a (bound, possibly negative or fractional) number of seconds."""

    @abc.abstractmethod
    def json_scalar(
        self, column: sa.ColumnElement[Any], path: JsonPath, kind: JsonKind
    ) -> sa.ColumnElement[Any]:
        """The JSON value at `path` as an SQL value when it is of `kind`, else SQL NULL.

        Path segments are bound as parameters, never formatted into the SQL text.
        """

    @abc.abstractmethod
    def json_is_null(self, column: sa.ColumnElement[Any], path: JsonPath) -> sa.ColumnElement[bool]:
        """True when the value at `path` is missing or JSON null."""

    def json_text(self, column: sa.ColumnElement[Any]) -> sa.ColumnElement[str]:
        """The text a JSON column stores, to read and compare exactly (engines with
        `capabilities.stores_json_text`: `storage.readable_json`)."""
        return sa.cast(column, sa.Text)

    def is_true(self, condition: sa.ColumnElement[bool]) -> sa.ColumnElement[bool]:
        """A condition that is never NULL: true exactly where `condition` is true."""
        return sa.type_coerce(sa.func.coalesce(condition, sa.false()), sa.Boolean())

    # --- writing ----------------------------------------------------------------------------

    @abc.abstractmethod
    def insert(self, table: sa.Table) -> Insert:
        """An INSERT that supports `on_conflict_message_id` and `upsert_on_key`."""

    @abc.abstractmethod
    def excluded(self, insert: Insert) -> Any:
        """The pseudo-table of the row that failed to insert (`EXCLUDED`)."""

    @abc.abstractmethod
    def on_conflict_message_id(
        self, insert: Insert, set_: dict[str, Any], where: sa.ColumnElement[bool] | None
    ) -> Insert:
        """Turn the insert into an upsert on `message_id`; `set_` values may use `excluded`."""

    @abc.abstractmethod
    def keep_message_id(self, insert: Insert) -> Insert:
        """Turn the insert into one that inserts only new identities: a row with the same
        `message_id` is left as it is (ON CONFLICT DO NOTHING)."""

    def bodies_differ(
        self, stored: sa.ColumnElement[Any], new: sa.ColumnElement[Any]
    ) -> sa.ColumnElement[bool]:
        """Two JSON bodies' texts differ (an idempotent upsert writes only a changed body)."""
        return sa.cast(stored, sa.Text) != sa.cast(new, sa.Text)

    @abc.abstractmethod
    def upsert(
        self, table: sa.Table, key: Sequence[str], values: dict[str, Any], update: Sequence[str]
    ) -> sa.Executable:
        """Insert one row of `values` (bound values or SQL expressions), or, when a row with the
        same `key` columns exists, set its `update` columns to the new values: one statement
        (worker heartbeats)."""

    def notify_when_returning(self, table_name: str) -> list[sa.ColumnElement[Any]]:
        """Extra RETURNING columns that notify listeners once when the statement returns rows;
        none without notifications."""
        return []

    # --- reading for a lease ----------------------------------------------------------------

    @abc.abstractmethod
    def lock_candidates(self, select: Select[Any], lease_index: str) -> Select[Any]:
        """Make the lease candidate query skip rows other transactions hold, and make it use
        the lease index (named `lease_index`)."""

    def partial_index_options(self, where: sa.ColumnElement[bool]) -> dict[str, Any]:
        """Keyword arguments that make an index partial (`sa.Index(..., **options)`)."""
        return {f"{self.name}_where": where}

    # --- parameters per message -------------------------------------------------------------

    def per_row(self, columns: Sequence[sa.ColumnClause[Any]]) -> sa.TableValuedAlias | None:
        """A FROM source with one row per message, read from one parameter holding every row,
        or None: then statements run once per message (executemany) with scalar parameters."""
        return None

    def among_per_row_ids(
        self, id_column: sa.ColumnElement[int], id_name: str
    ) -> sa.ColumnElement[bool] | None:
        """A restriction of `id_column` to the ids of `per_row`'s source (its column
        `id_name`), for a statement that joins the source to the queue table by id; None: the
        join is enough."""
        return None

    def per_row_parameters(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The parameter(s) `per_row`'s source reads: one dict of column values per message.
        Only called when `per_row` gives a source."""
        raise NotImplementedError(f"{self.name} has no per-row source")

    def per_row_arrays(self, columns: Sequence[sa.ColumnClause[Any]]) -> sa.TableValuedAlias | None:
        """`per_row` for a statement the dialect runs itself (its `enqueue_round`), which may
        read one array per column instead (PostgreSQL); by default `per_row`'s source."""
        return self.per_row(columns)
