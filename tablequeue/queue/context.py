"""What every queue operation works on: one queue's table in one database, and its spec."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from ..dialects import Dialect
from ..dialects.queries import Queries
from ..spec import QueueSpec
from ..storage import Storage


@dataclass(frozen=True)
class QueueContext:
    storage: Storage
    name: str
    table: sa.Table
    spec: QueueSpec

    @property
    def dialect(self) -> Dialect:
        return self.storage.dialect

    @property
    def queries(self) -> Queries:
        """The table's statements, built once per table and database."""
        return self.storage.queries(self.table)
