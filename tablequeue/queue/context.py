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
    """What this handle last saw of the queue's limits (`state`: none until a lease finds
    some), which `queue/flow.py` leases through: the rate limit's bucket, a global concurrency,
    ordered groups. A stale belief costs an empty lease, never a lease too many."""

    state: FlowState = field(default_factory=lambda: FlowState(None, None, None))

    @property
    def controlled(self) -> bool:
        """A lease of this queue locks a registry or bucket row first (a transaction's work)."""
        return self.state.controlled

    def remember(self, state: FlowState) -> None:
        """Lease through the limits the queue has now."""
        self.state = state


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
