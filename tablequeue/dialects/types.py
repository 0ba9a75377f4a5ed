"""The small types every dialect shares: what an engine can do, JSON paths, the rows operations
give back, and the parameter objects of the wide operations (lease, enqueue, finish, fail)."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa

from ..names import DedupeMode

JsonKind = Literal["string", "number", "boolean"]
JsonPath = Sequence[str | int]
LeaseExpiredPolicy = Literal["Abandon", "Retry"]
FinishOutcome = Literal["processed", "again", "delete"]
"""Processed (kept with its result), again (rescheduled: a recurring message) or deleted."""

Rows = Sequence[sa.Row[*tuple[Any, ...]]]
LeasedRows = Sequence[Sequence[Any]]
"""Every column of each leased row, in table order (`Message(*row)`)."""
SweptLease = sa.Row[Any]
"""A lease the sweep settled: `status` (its new one), `id`, `tracking_id`, `lease_owner`,
`correlation_id`, `attempts`."""


@dataclass(frozen=True)
class TenantUrlRules:
    """What a database URL from a tenant may hold where it crosses a privilege boundary (the
    operator reads it from a tenant's Secret): `tablequeue.storage.tenant_urls`."""

    parameters: frozenset[str] = frozenset()
    """The query parameters passed on (lower case); any other is refused."""
    connect_timeout: str | None = None
    """The parameter bounding a connect, capped at the operator's own bound."""
    needs_host: bool = True
    """A server reached by host name, never a socket path or a name the client looks up in its
    own files (a DSN)."""
    odbc: bool = False
    """An ODBC connection string: parameter names are not case-sensitive, and no part may hold
    the `;`, `{` or `}` that would add keys of its own (a DRIVER loads a library)."""


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do beyond the conformance suite's common ground."""

    notifies: bool
    """Enqueues and releases wake listening workers (`Dialect.listen`); else workers poll."""
    estimates_counts: bool
    """Stats may estimate the count of a huge finished status from table statistics."""
    vacuums: bool
    """`vacuum_if_bloated` can reclaim dead rows' space (else the engine reuses it itself)."""
    folds_writes: bool = False
    """Data-modifying statements nest in one statement (`WITH done AS (DELETE ... RETURNING)
    INSERT ...`): recording a result costs no extra round trip."""
    one_writer: bool = False
    """One write transaction at a time in the whole database (SQLite): a lease waits while
    another connection's transaction that wrote is open."""
    enqueues_in_autocommit: bool = False
    """An enqueue of messages with distinct identities is one statement that needs no
    transaction around it (`Dialect.enqueue_autocommit`): one round trip instead of three."""
    stores_json_text: bool = True
    """JSON columns hold the text as written (SQLite, MariaDB, SQL Server), which a plain SELECT
    shows and comparisons see; else a parsed form (PostgreSQL's jsonb)."""
    first_schema_version: int = 1
    """The oldest table layout (`storage.schema.SCHEMA_VERSION`) this engine ever had: tables
    of older versions, to migrate, exist only on engines supported back then."""


@dataclass(frozen=True, slots=True)
class GroupLease:
    """How a queue with ordered groups leases (`spec.groups`, read from its registry row under
    the row's lock): at most `limit` messages of one group key Leased at once, each only when
    fewer than `limit` of its key are Leased or ahead of it (a lower id) and still waiting:
    Pending, Sleeping, or, with `hold`, Error or Abandoned."""

    limit: int
    hold: bool

    @property
    def shape(self) -> tuple[bool, bool]:
        """What the statement's text depends on: one at a time (NOT EXISTS), and `hold`."""
        return (self.limit == 1, self.hold)


@dataclass(frozen=True, slots=True)
class LeaseRequest:
    """What `Dialect.lease` takes: up to `batch_size` due messages of `queue` for `owner`."""

    queue: str
    owner: str
    batch_size: int
    lease_seconds: float
    correlation_id: str
    """The lease batch: every message of one lease shares it."""
    rate_limited: bool = False
    """The caller took tokens from the queue's rate-limit bucket for this lease; else a
    rate-limited queue leases nothing (`Queries.flow_gate`)."""
    concurrency_limited: bool = False
    """The caller holds the queue's registry row locked and asks for no more than its global
    concurrency leaves; else a queue with a global concurrency leases nothing."""
    group: GroupLease | None = None
    """The caller holds the queue's registry row locked and leases by its ordered groups; else
    a queue with groups leases nothing."""


def group_parameters(request: LeaseRequest) -> dict[str, Any]:
    """The lease statement's :b_k, when its group gate counts (`Queries.group_gate`)."""
    group = request.group
    return {"b_k": group.limit} if group is not None and group.limit > 1 else {}


@dataclass(frozen=True, slots=True)
class EnqueueBatch:
    """What `Dialect.enqueue_round` and `enqueue_autocommit` write: messages with distinct
    identities, one dict of `b_*` values each (`enqueue_statement`)."""

    queue: str
    rows: Sequence[dict[str, Any]]
    upsert: bool
    """Rows carry messageIds: an existing row with the same one is replaced."""
    idempotent: bool
    """The queue compares bodies: an unchanged message is left as it is."""
    dedupe: DedupeMode = "replace"
    """What an existing row with the same messageId gets: replaced, kept, or kept while it is
    younger than `window_seconds` (`dialects/queries/enqueue.py`)."""
    window_seconds: float | None = None

    def shared_parameters(self) -> dict[str, Any]:
        """The parameters every row of the statement shares."""
        if self.dedupe == "window":
            return {"b_queue": self.queue, "b_window": self.window_seconds}
        return {"b_queue": self.queue}


@dataclass(frozen=True, slots=True)
class SettleRequest:
    """What `Dialect.finish` and `fail` record: outcomes of leases `owner` holds, one dict
    per message (`b_id`, `b_version`, `b_cid` and the outcome's own values)."""

    owner: str
    rows: Sequence[dict[str, Any]]


def path_text(path: JsonPath) -> str:
    """`$."Product"."Sku"[0]`: keys quoted, as every engine's JSON path syntax accepts, and
    written as `canonical_json` writes them in bodies (non-ASCII as is): SQLite before 3.45 and
    MariaDB's JSON_EXTRACT compare a path's key with the stored text."""
    return "$" + "".join(
        f"[{segment}]"
        if isinstance(segment, int)
        else "." + json.dumps(segment, ensure_ascii=False)
        for segment in path
    )


def notify_channel(table_name: str) -> str:
    """The LISTEN/NOTIFY channel of a queue table (a validated table name plus a prefix)."""
    channel = f"tq_{table_name}"
    if len(channel) <= 63:  # PostgreSQL's identifier limit
        return channel
    return f"tq_{table_name[:51]}_{zlib.crc32(table_name.encode()):08x}"
