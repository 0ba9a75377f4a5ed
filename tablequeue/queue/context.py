"""What every queue operation works on: one queue's table in one database, and its spec."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from ..dialects import Dialect
from ..dialects.queries import Queries
from ..models import FlowState
from ..spec import QueueSpec
from ..storage import Storage


def spec_of(storage: Storage, name: str, settings: Any) -> QueueSpec:
    """The validated spec of a queue's registry settings, validated again only when they change:
    a spec may hold megabytes of schedules, and it is read on every request (the open health
    route too). The stored settings are compared whole, so a changed spec is never missed."""
    cached = storage.specs.get(name)
    if cached is not None and cached[0] == settings:
        spec: QueueSpec = cached[1]
        return spec
    spec = QueueSpec.model_validate(settings)
    storage.specs[name] = (settings, spec)
    return spec


@dataclass
class FlowMemory:
    """What this handle last saw of the queue's limits: whether its leases go through the
    rate limit's bucket (`limited`), count against a global concurrency (`capped`) and keep to
    ordered groups (`grouped`, `queue/flow.py`). A stale belief costs an empty lease, never a
    lease too many."""

    limited: bool = False
    capped: bool = False
    grouped: bool = False

    @property
    def controlled(self) -> bool:
        """A lease of this queue locks a registry or bucket row first (a transaction's work)."""
        return self.limited or self.capped or self.grouped

    def remember(self, state: FlowState) -> None:
        """Lease through the limits the queue has now."""
        self.limited, self.capped, self.grouped = state.limited, state.capped, state.grouped


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
