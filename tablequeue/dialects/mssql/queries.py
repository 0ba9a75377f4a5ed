"""SQL Server's statements where the shared ones do not fit."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.selectable import Select

from ..per_row import PerRow
from ..queries import HELD_COLUMNS, Queries, statement


class MssqlQueries(Queries):
    @statement
    def delete_done(self) -> tuple[sa.Delete, PerRow]:
        # Differs because T-SQL has no DELETE ... USING: the shared statement would render as
        # T-SQL's own DELETE FROM orders FROM orders, OPENJSON(...); a semi-join (WHERE EXISTS
        # over the per-row source) keeps one FROM, in plain SQL.
        per_row = PerRow(self.dialect, HELD_COLUMNS)
        assert per_row.source is not None
        held: Select[Any] = sa.select(sa.literal_column("1")).select_from(per_row.source)
        return sa.delete(self.table).where(held.where(self.held_by(per_row)).exists()), per_row
