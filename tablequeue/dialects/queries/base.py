"""What every area of a queue table's statements shares: the tables, the status conditions, the
`statement` decorator that builds each statement once, and the per-row lease columns."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

import sqlalchemy as sa

from ... import names
from ..parts import SqlParts
from ..statuses import literal_status

S = TypeVar("S")

HELD_COLUMNS: list[sa.ColumnClause[Any]] = [
    sa.column("b_id", sa.BigInteger()),
    sa.column("b_version", sa.Integer()),
    sa.column("b_cid", sa.String()),
]
"""Per-message parameters that identify a lease: the row, the version leased, the lease batch."""


def swept_columns(t: sa.Table) -> list[sa.ColumnElement[Any]]:
    """What a sweep tells of each lease it settled (`types.SweptLease`), new status first."""
    return [t.c.status, t.c.id, t.c.tracking_id, t.c.lease_owner, t.c.correlation_id, t.c.attempts]


class Built(Protocol):
    """What `statement` keeps its statements in: one dict per table and engine."""

    _built: dict[tuple[Any, ...], Any]


B = TypeVar("B", bound=Built)
P = ParamSpec("P")


def statement(build: Callable[Concatenate[B, P], S]) -> Callable[Concatenate[B, P], S]:
    """A statement built on first use with these arguments, then kept (building costs more than
    running it): the method's name and arguments are the key in its object's `_built`."""
    name = build.__name__

    def built(self: B, /, *args: P.args, **kwargs: P.kwargs) -> S:
        key = (name, *args, *kwargs.items())
        made: S | None = self._built.get(key)
        if made is None:
            made = self._built[key] = build(self, *args, **kwargs)
        return made

    functools.update_wrapper(built, build)
    return built


def bind(name: str, type_: Any = None) -> sa.BindParameter[Any]:
    return sa.bindparam(name, type_=type_)


class TableQueries:
    """One queue table's statements on one engine: the tables and conditions every area uses."""

    def __init__(
        self, dialect: SqlParts, table: sa.Table, registry: sa.Table, rate_limits: sa.Table
    ) -> None:
        self.dialect = dialect
        self.table = table
        self.registry = registry
        self.rate_limits = rate_limits
        self._built: dict[tuple[Any, ...], Any] = {}
        t = table
        self.leasable = t.c.status.in_(
            [literal_status(names.PENDING), literal_status(names.SLEEPING)]
        )
        self.leased = t.c.status == literal_status(names.LEASED)
        self.still_leased = t.c.status + sa.literal_column("''") == literal_status(names.LEASED)
        """`leased` for rows found by their ids (`held_by`), in a form no index serves: the
        status index has an entry for every row leased since the last vacuum, which a plan
        through it reads for every batch."""

    def once(self, key: tuple[Any, ...], build: Callable[[], S]) -> S:
        """What `build` makes, made on first use and kept with the table's statements (e.g. a
        dialect's statement compiled for its driver)."""
        made: S | None = self._built.get(key)
        if made is None:
            made = self._built[key] = build()
        return made
