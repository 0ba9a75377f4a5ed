"""What every queue operation works on: one queue's table in one database, and its spec."""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlalchemy as sa

from ..dialects import Dialect
from ..dialects.queries import Queries
from ..spec import QueueSpec
from ..storage import Storage


@dataclass
class FlowMemory:
    """What this handle last saw of the queue's rate limit: whether its leases go through the
    bucket (`queue/flow.py`). A stale belief costs an empty lease, never a lease too many."""

    limited: bool = False


@dataclass(frozen=True)
class QueueContext:
    storage: Storage
    name: str
    table: sa.Table
    spec: QueueSpec
    flow: FlowMemory = field(default_factory=lambda: FlowMemory())

    @property
    def dialect(self) -> Dialect:
        return self.storage.dialect

    @property
    def queries(self) -> Queries:
        """The table's statements, built once per table and database."""
        return self.storage.queries(self.table)
