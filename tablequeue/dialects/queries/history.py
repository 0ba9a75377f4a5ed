"""The statements that record job history beside a queue table's outcomes: the final outcome
of a finished message in `tablequeue_results`, each failed or lost attempt in
`tablequeue_attempts` (see `storage/history.py`).

On an engine with `capabilities.folds_writes` (PostgreSQL) a success and its result are one
statement: `WITH done AS (DELETE | UPDATE ... RETURNING ...) INSERT INTO tablequeue_results
SELECT ... FROM done ON CONFLICT ...`. Elsewhere the outcome is recorded first, then the results
are written from what the worker knows, by one more statement of the same transaction (when a
batch was not recorded whole, which of it was is read back first).
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy.sql.dml import Insert

from ... import names
from ...limits import ATTEMPTS_KEPT
from ..dialect import Dialect
from ..per_row import PerRow
from ..statuses import literal_status
from . import Queries
from .base import HELD_COLUMNS, statement

S = TypeVar("S")


class HistoryTables(Protocol):
    """The shared history tables (`storage.history`)."""

    @property
    def results(self) -> sa.Table: ...

    @property
    def attempts(self) -> sa.Table: ...


FOLDED_COLUMNS = ("tracking_id", "message_pk", "message_id", "status", "result", "last_error")


def _bind(name: str, type_: Any = None) -> sa.BindParameter[Any]:
    return sa.bindparam(name, type_=type_)


class HistoryQueries:
    """The history statements of one queue table on one engine (built once each)."""

    def __init__(self, dialect: Dialect, queries: Queries, tables: HistoryTables) -> None:
        self.dialect = dialect
        self.queries = queries
        self.table = queries.table
        self.tables = tables
        self._built: dict[tuple[Any, ...], Any] = {}

    # --- results, folded into the outcome (capabilities.folds_writes) -----------------------

    @statement
    def finish_and_record(self, delete: bool) -> tuple[Insert, PerRow]:
        """Delete (or mark Processed) completed messages still held at the version leased and
        upsert their results, in one statement returning a row per message finished."""
        t, d, q = self.table, self.dialect, self.queries
        finish: sa.Update | sa.Delete
        if delete:
            per_row = PerRow(q.dialect, [*HELD_COLUMNS, sa.column("b_result", t.c.result.type)])
            finish = sa.delete(t).where(q.held_by(per_row))
        else:
            finish, per_row = q.mark_processed()
        done = finish.returning(
            t.c.tracking_id,
            t.c.id.label("message_pk"),
            t.c.message_id,
            literal_status(names.PROCESSED).label("status"),
            per_row.c["b_result"].label("result"),
            t.c.last_error,
            t.c.attempts,
        ).cte("done")
        results = self.tables.results
        source = sa.select(
            done.c.tracking_id,
            _bind("b_queue", sa.String()),
            done.c.message_pk,
            done.c.message_id,
            done.c.status,
            done.c.result,
            done.c.last_error,
            done.c.attempts,
            d.now(),
        )
        columns = [*FOLDED_COLUMNS[:1], "queue", *FOLDED_COLUMNS[1:], "attempts", "processed_at"]
        insert = d.insert(results).from_select(columns, source)
        upsert = d.upsert_on_key(insert, "tracking_id", self._replaced())
        assert upsert is not None, "an engine that folds writes upserts"
        return upsert.add_cte(done).returning(results.c.tracking_id), per_row

    def _replaced(self) -> list[str]:
        return [c.name for c in self.tables.results.c if c.name != "tracking_id"]

    # --- results, recorded after the outcome ------------------------------------------------

    @statement
    def settled_rows(self) -> sa.Select[Any]:
        """Rows among :b_ids that :b_owner settled and no longer leases (Processed, Sleeping
        or Error): which of a batch this transaction recorded, when not all of them."""
        t = self.table
        settled = [names.PROCESSED, names.SLEEPING, names.ERROR]
        return sa.select(t.c.id, t.c.correlation_id, t.c.status, t.c.last_error).where(
            t.c.id.in_(sa.bindparam("b_ids", expanding=True, type_=sa.BigInteger())),
            t.c.status.in_([literal_status(s) for s in settled]),
            t.c.lease_owner == _bind("b_owner", sa.String()),
            t.c.lease_expires_at.is_(None),
        )

    @statement
    def present_ids(self) -> sa.Select[Any]:
        """Which of :b_ids still have a row (a plain read: it locks nothing)."""
        t = self.table
        ids = sa.bindparam("b_ids", expanding=True, type_=sa.BigInteger())
        return sa.select(t.c.id).where(t.c.id.in_(ids))

    @statement
    def write_results(self) -> tuple[Insert, bool]:
        """Upsert results (one parameter set per message; the database's clock), and whether
        it is an upsert (else `forget_results` first)."""
        d, results = self.dialect, self.tables.results
        values = {
            c.name: sa.bindparam(f"r_{c.name}", type_=c.type)
            for c in results.c
            if c.name != "processed_at"
        }
        insert = d.insert(results).values(**values, processed_at=d.now())
        upsert = d.upsert_on_key(insert, "tracking_id", self._replaced())
        return (insert, False) if upsert is None else (upsert, True)

    @statement
    def forget_results(self) -> sa.Delete:
        """Results of :b_tracking (engines without an upsert write them after this)."""
        results = self.tables.results
        tracking = sa.bindparam("b_tracking", expanding=True, type_=results.c.tracking_id.type)
        return sa.delete(results).where(results.c.tracking_id.in_(tracking))

    # --- attempts ---------------------------------------------------------------------------

    @statement
    def write_attempts(self) -> sa.Insert:
        """Append attempts (one parameter set per attempt; the database's clock)."""
        d, attempts = self.dialect, self.tables.attempts
        values = {
            c.name: sa.bindparam(f"a_{c.name}", type_=c.type)
            for c in attempts.c
            if c.name not in ("id", "at")
        }
        return sa.insert(attempts).values(**values, at=d.now())

    @statement
    def trim_attempts(self) -> sa.Delete:
        """Keep the newest ATTEMPTS_KEPT attempts of each message of :b_tracking."""
        a = self.tables.attempts
        tracking = sa.bindparam("b_tracking", expanding=True, type_=a.c.tracking_id.type)
        newest_first = sa.func.row_number().over(
            partition_by=a.c.tracking_id, order_by=a.c.id.desc()
        )
        ranked = sa.select(a.c.id, newest_first.label("n")).where(a.c.tracking_id.in_(tracking))
        ranked_rows = ranked.subquery("ranked")
        old = sa.select(ranked_rows.c.id).where(ranked_rows.c.n > ATTEMPTS_KEPT)
        return sa.delete(a).where(a.c.id.in_(old.subquery("old").select()))
