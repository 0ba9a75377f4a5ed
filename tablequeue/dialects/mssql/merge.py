"""`MERGE ... WITH (HOLDLOCK)`: SQL Server's upsert by messageId, which SQLAlchemy has no
construct for. HOLDLOCK keeps the key range locked from the match to the insert, so two
batches enqueueing the same new identity cannot both insert it (the unique index would refuse
one of them instead of it becoming an update).

    MERGE INTO orders WITH (HOLDLOCK)
    USING (SELECT ... FROM OPENJSON(?) WITH (...) AS b) AS s ON orders.message_id = s.message_id
    WHEN MATCHED [AND <changed>] THEN UPDATE SET ...
    WHEN NOT MATCHED THEN INSERT (...) VALUES (s....)
    OUTPUT inserted.id, ...;
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement, Executable


class Merge(Executable, ClauseElement):
    """Insert rows of `source` (a subquery whose columns are named after the table's), or
    update the row with the same `keys` (message_id) with `set_` (only where `when_matched`
    holds; with no `set_`, leave it as it is)."""

    inherit_cache = False  # the parts are plain attributes: compiled per execution
    _returning: tuple[sa.ColumnElement[Any], ...] = ()

    def __init__(
        self,
        table: sa.Table,
        source: sa.Subquery,
        set_: Sequence[tuple[str, Any]],
        when_matched: sa.ColumnElement[bool] | None,
        keys: Sequence[str] = ("message_id",),
    ) -> None:
        self.table = table
        self.source = source
        self.set_ = list(set_)
        self.when_matched = when_matched
        self.keys = tuple(keys)

    def returning(self, *columns: sa.ColumnElement[Any]) -> Merge:
        merge = Merge(self.table, self.source, self.set_, self.when_matched, self.keys)
        merge._returning = self._returning + columns
        return merge


def _clause(value: Any) -> ClauseElement:
    return value if isinstance(value, ClauseElement) else sa.literal(value)


@compiles(Merge, "mssql")
def _compile_merge(merge: Merge, compiler: SQLCompiler, **kw: Any) -> str:
    # Parts are compiled in text order: positional parameters are numbered as they appear.
    quote = compiler.preparer.quote
    table = compiler.preparer.format_table(merge.table)
    source = compiler.process(merge.source, asfrom=True, **kw)
    same = [merge.table.c[key] == merge.source.c[key] for key in merge.keys]
    on = compiler.process(sa.and_(*same), **kw)
    matched = ""  # no assignments: an existing row is left as it is
    if merge.set_:
        matched = " WHEN MATCHED"
        if merge.when_matched is not None:
            matched += " AND " + compiler.process(merge.when_matched, **kw)
        assignments = ", ".join(
            f"{quote(name)} = {compiler.process(_clause(value), **kw)}"
            for name, value in merge.set_
        )
        matched += f" THEN UPDATE SET {assignments}"
    names = [column.name for column in merge.source.c]
    inserted = ", ".join(quote(name) for name in names)
    values = ", ".join(compiler.process(merge.source.c[name], **kw) for name in names)
    text = (
        f"MERGE INTO {table} WITH (HOLDLOCK) USING {source} ON {on}{matched}"  # noqa: S608 (parts)
        f" WHEN NOT MATCHED THEN INSERT ({inserted}) VALUES ({values})"
    )
    if merge._returning:
        output = ", ".join(f"inserted.{quote(column.name)}" for column in merge._returning)
        text += f" OUTPUT {output}"
    return text + ";"
