"""Indexes on JSON body paths (`spec.indexes`): names, validation, apply, and the predicate
compiler's view of them.

A queue declares `indexes: [{path: Product.Sku}, {path: Total, type: number}]`. `apply`
creates the missing ones and drops the `tqx_...` indexes of the table that the spec no longer
names (never an index it did not make). Each engine's way is in its package under `dialects/`
(`json_index.py`).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from . import predicate
from .dialects import Dialect, JsonKind
from .dialects.json_index import PREFIX, JsonIndex
from .errors import InvalidInput

KINDS: dict[str, JsonKind] = {"text": "string", "number": "number", "boolean": "boolean"}
"""`spec.indexes[].type` -> the JSON kind the predicate compiler compares."""
WAIT_SECONDS = 3600.0
"""How long an apply waits for another one's index builds (PostgreSQL) before giving up."""
EXPRESSION_VERSION = 1
"""Part of every index name: a change of the indexed expression gives new names, so apply
replaces the indexes built the old way."""
_QUOTED_KEY = re.compile(r"[A-Za-z0-9_ .:@/$+-]{1,64}")
NAME = re.compile(r"^tqx_[a-z0-9_]{1,59}$")
log = logging.getLogger("tablequeue")


def check_path(text: str) -> str:
    """A path of the predicate language whose segments an index can hold: names, array
    indexes and quoted keys of letters, digits, space and `_ . : @ / $ + -` (not leading `-`)."""
    path = predicate.parse_path(text)
    for segment in path:
        if isinstance(segment, str) and not (
            predicate._NAME.fullmatch(segment)
            or (_QUOTED_KEY.fullmatch(segment) and not segment.startswith("-"))
        ):
            raise InvalidInput(
                f"invalid index path {text[:80]!r}: the key {segment[:40]!r} may hold only "
                "letters, digits, space and _ . : @ / $ + - (at most 64, not starting with -)"
            )
    return text


def index_name(table_name: str, path: tuple[str | int, ...], kind: JsonKind) -> str:
    """`tqx_<table>_<path>_<checksum>`, at most 63 characters (validated by NAME)."""
    canonical = predicate.render_path(path)
    digest = hashlib.sha256(
        f"{table_name}\0{canonical}\0{kind}\0{EXPRESSION_VERSION}".encode()
    ).hexdigest()[:8]
    slug = re.sub(r"[^a-z0-9]+", "_", canonical.lower()).strip("_")[:20] or "path"
    name = f"{PREFIX}{table_name[:26]}_{slug}_{digest}"
    if not NAME.fullmatch(name):  # pragma: no cover - made of validated parts
        raise InvalidInput(f"invalid index name {name!r}")
    return name


def resolve(table_name: str, specs: Sequence[Any]) -> list[JsonIndex]:
    """The indexes of `spec.indexes` (objects with `path` and `type`), named for the table."""
    resolved: dict[str, JsonIndex] = {}
    for spec in specs:
        path = predicate.parse_path(check_path(spec.path))
        kind = KINDS[spec.type]
        name = index_name(table_name, path, kind)
        resolved[name] = JsonIndex(name, path, kind)
    return list(resolved.values())


def check(dialect: Dialect, specs: Sequence[Any]) -> None:
    """Refuse, before apply's first DDL, a path longer than the engine reads."""
    most = dialect.json_indexes.max_path_steps
    for spec in specs:
        steps = len(predicate.parse_path(spec.path))
        if most is not None and steps > most:
            raise InvalidInput(
                f"invalid index path {spec.path[:80]!r}: {steps} steps, and {dialect.name}"
                f" reads JSON paths of at most {most}"
            )


def create_before_registry(
    connection: Connection, dialect: Dialect, table_name: str, specs: Sequence[Any]
) -> list[str]:
    """In apply's transaction, before the registry names them: the indexes of engines whose
    queries name a generated column (MariaDB, SQL Server), so that no query ever names a
    column that is not there yet. PostgreSQL builds its own later, CONCURRENTLY."""
    if dialect.json_indexes.concurrently:
        return []
    return _sync(connection, dialect, table_name, specs, drop=False)["created"]


def sync(
    engine: Engine,
    dialect: Dialect,
    table_name: str,
    specs: Sequence[Any],
    wait_seconds: float = WAIT_SECONDS,
) -> dict[str, list[str]]:
    """After the registry names the declared indexes: create those the table lacks (or has
    from a failed build) and drop the `tqx_` ones it no longer declares (queries stopped
    naming them when the registry changed): `{"created": [...], "dropped": [...]}`. On
    PostgreSQL one apply builds at a time: the others wait up to `wait_seconds`, then raise
    IndexBuildBusy."""
    strategy = dialect.json_indexes
    with strategy.ddl_connection(engine, wait_seconds) as connection:
        return _sync(connection, dialect, table_name, specs, drop=True)


def _sync(
    connection: Connection, dialect: Dialect, table_name: str, specs: Sequence[Any], drop: bool
) -> dict[str, list[str]]:
    wanted = {index.name: index for index in resolve(table_name, specs)}
    strategy = dialect.json_indexes
    created, dropped = [], []
    existing = strategy.existing(connection, table_name)
    for name, valid in sorted(existing.items()):
        if (drop and name not in wanted) or not valid:
            for statement in strategy.drop_statements(connection, table_name, name):
                connection.exec_driver_sql(statement)
            if name not in wanted:
                dropped.append(name)
    try:
        for name, index in sorted(wanted.items()):
            if existing.get(name) is not True:
                created.append(name)
                for statement in strategy.create_statements(connection, table_name, index):
                    connection.exec_driver_sql(statement)
    except Exception:
        if strategy.undone_on_failure:
            _undo(connection, dialect, table_name, created)
        raise
    return {"created": created, "dropped": dropped}


def _undo(connection: Connection, dialect: Dialect, table_name: str, created: list[str]) -> None:
    """Drop the indexes a failed `_sync` made (the last one perhaps in part). Should that fail
    too, the error that stopped the apply is the one raised: the next apply drops them."""
    strategy = dialect.json_indexes
    for name in created:
        try:
            for statement in strategy.drop_statements(connection, table_name, name):
                connection.exec_driver_sql(statement)
        except sa.exc.DBAPIError:
            log.warning("could not drop the JSON index %s of a failed apply", name, exc_info=True)


def lookup(
    engine: Engine, dialect: Dialect, table: sa.Table, specs: Sequence[Any]
) -> predicate.IndexLookup | None:
    """What `predicate.to_sql` asks to narrow a comparison with one of the table's indexes."""
    if not specs:
        return None
    strategy = dialect.json_indexes
    by_path = {(index.path, index.kind): index for index in resolve(table.name, specs)}

    def narrowed(
        path: tuple[str | int, ...], kind: JsonKind, op: str, value: predicate.Scalar
    ) -> sa.ColumnElement[bool] | None:
        index = by_path.get((tuple(path), kind))
        if index is None:
            return None
        key = strategy.key(index, op, value)
        if key is None:
            return None
        key_op, key_value = key
        indexed = strategy.indexed(engine, table, index)
        return predicate.sql_operator(key_op)(indexed, key_value)

    return narrowed
