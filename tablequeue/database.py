"""`Database`: a database that holds queues, and `connect`. The storage (engine, transactions,
registry) with handles on its queues; the one place that knows both floors.

URLs as users write them: `postgresql://user:pass@host/db` (psycopg 3 underneath),
`postgresql+psycopg://...`, `postgres://...`, `sqlite:///path/to/file.db`.
"""

from __future__ import annotations

import contextlib
import uuid
import warnings
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from . import names
from .errors import InvalidInput, MessageNotFound, QueueNotFound, QueueSpecWarning
from .health import WorkerPresence
from .limits import MAX_CORRELATION_ID_LENGTH, MAX_MESSAGE_ID_LENGTH
from .models import (
    AuditEntry,
    Delivery,
    FlowState,
    Heartbeat,
    Job,
    Message,
    NewMessage,
    TopicSubscription,
    WorkerInfo,
)
from .queue import Queue, history, publish, subscribe
from .queue.context import spec_of
from .queue.subscribe import Expiry
from .storage import Storage, audit, flow_control, registry
from .storage import workers as worker_rows

if TYPE_CHECKING:
    from .spec import QueueResource

__all__ = ["Database", "connect"]

FOUND_LIMIT = 50
"""How many messages `Database.find_messages` returns at most."""


class Database(Storage):
    """A database that holds queues: one engine, one dialect, the registry table."""

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def apply(
        self,
        resource: QueueResource,
        owner: str | None = None,
        index_wait_seconds: float = 3600.0,
    ) -> str:
        """Create or migrate the table and registry row, and the indexes of `spec.indexes`:
        created, updated or unchanged.

        `owner` (`namespace/name`) claims the queue for one Queue resource (the operator).
        `index_wait_seconds`: how long to wait while another apply builds indexes on the
        database (PostgreSQL) before IndexBuildBusy. Settings that are valid but likely
        mistakes (`QueueSpec.warnings`) are reported as QueueSpecWarning (Python's
        `warnings`)."""
        outcome = registry.apply(self, resource, owner, index_wait_seconds)
        for text in resource.spec.warnings():
            warnings.warn(f"queue {resource.name}: {text}", QueueSpecWarning, stacklevel=2)
        return outcome

    def queue(self, name: str) -> Queue:
        """A handle on an existing queue, with the settings it was applied with."""
        names.queue_name(name)
        with self.transaction() as connection:
            row = registry.find_registry_row(self, connection, name)
        if row is None:
            raise QueueNotFound(
                f"queue {name!r} does not exist",
                self.shown_url,
                "create it with `tablequeue queue apply -f FILE`",
            )
        spec = spec_of(self, name, row.settings)
        return Queue(self, name, self.table(row.table_name), spec)

    def check_owner(self, name: str, owner: str) -> None:
        """QueueOwnedElsewhere when another Queue resource than `owner` (`namespace/name`)
        manages queue `name`, QueueNotFound when there is none: what the operator checks before
        it reads a queue for a Queue resource (two namespaces may name the same queue)."""
        registry.check_owner(self, name, owner)

    def publish(
        self, topic: str, message: Any, *, connection: Any = None, **options: Any
    ) -> list[Delivery]:
        """Enqueue `message` into every queue subscribed to `topic` (`spec.subscriptions`)
        whose predicate matches it, in one transaction; one `Delivery` per subscribed queue
        (`filtered` where the predicate did not match), none when nobody subscribes.

        `options` as for `Queue.enqueue` (message_id, headers, priority, after, ...);
        `connection`: the caller's transaction, as for `Queue.enqueue`."""
        return publish.publish(self, topic, NewMessage(message=message, **options), connection)

    def subscribe(
        self, topic: str, queue: str, *, where: str | None = None, expires: Expiry = None
    ) -> TopicSubscription:
        """Subscribe queue `queue` to `topic` at runtime, beside its `spec.subscriptions`
        (its spec must allow it: `runtimeSubscriptions.allowed`), optionally only for messages
        matching the predicate `where`. `expires`: a timedelta from now or an aware datetime
        (database clock), at most the spec's `maxExpiry` (also the expiry when None is given;
        without a maxExpiry, None never expires). Subscribing again replaces the queue's
        runtime subscription of that topic; a topic of its spec is refused (Conflict)."""
        return subscribe.subscribe(self, topic, queue, where, expires)

    def unsubscribe(self, topic: str, queue: str) -> None:
        """End queue `queue`'s runtime subscription to `topic` (SubscriptionNotFound when it
        has none; a subscription of its spec is refused: Conflict)."""
        subscribe.unsubscribe(self, topic, queue)

    def list_subscriptions(self, topic: str | None = None) -> list[TopicSubscription]:
        """Every subscription that has not expired (of `topic` only, if given), the spec's
        and the runtime ones, by topic and queue."""
        return subscribe.listing(self, topic)

    def queues(self) -> list[dict[str, Any]]:
        return registry.queues(self)

    def find_message(self, tracking_id: str) -> tuple[Queue, Message]:
        """The queue and message a tracking id belongs to, searching every queue's table."""
        tracking = _tracking_id(tracking_id)
        for row in self.queues():
            queue = self.queue(row["name"])
            with contextlib.suppress(MessageNotFound):
                return queue, queue.get_by_tracking_id(tracking)
        raise MessageNotFound(f"no message with tracking id {tracking_id} in any queue")

    def find_messages(self, key: str, limit: int = FOUND_LIMIT) -> list[tuple[str, Message]]:
        """The messages of every queue whose message id is `key`, whose tracking id it is, or
        that share it as the caller's correlation id (at most `limit`, as (queue name,
        message)): lookups per queue, each served by the queue table's message_id, tracking_id
        or correlation index."""
        key = key.strip()
        if not key:
            raise InvalidInput("give a tracking id or a message id to look for")
        tracking = _as_uuid(key)
        found: list[tuple[str, Message]] = []
        for row in self.queues():
            queue = self.queue(row["name"])
            if tracking is not None:
                with contextlib.suppress(MessageNotFound):
                    found.append((queue.name, queue.get_by_tracking_id(tracking)))
            if len(key) <= MAX_MESSAGE_ID_LENGTH:
                found += [(queue.name, m) for m in queue.messages(message_id=key, limit=limit)]
            if len(key) <= MAX_CORRELATION_ID_LENGTH:
                seen = {m.id for name, m in found if name == queue.name}
                shared = queue.messages(correlation_id=key, limit=limit)
                found += [(queue.name, m) for m in shared if m.id not in seen]
            if len(found) >= limit:
                break
        return found[:limit]

    def find_job(self, tracking_id: str) -> Job:
        """What became of a message by its tracking id: its row in whichever queue holds it
        (`source` "queue"), else its kept outcome (`source` "results", see keepResultsFor)."""
        tracking = _tracking_id(tracking_id)
        with contextlib.suppress(MessageNotFound):
            queue, message = self.find_message(tracking_id)
            return Job.of_message(queue.name, message)
        kept = history.stored_result(self, tracking)
        if kept is None:
            raise MessageNotFound(
                f"no message with tracking id {tracking_id} in any queue, and no kept result"
            )
        return Job.of_result(kept)

    def heartbeat(self, beat: Heartbeat) -> None:
        """Record a worker's heartbeat in `tablequeue_workers` (one upsert)."""
        worker_rows.beat(self, beat)

    def ensure_workers_table(self) -> None:
        """Create `tablequeue_workers` if a registry made by an older tablequeue lacks it."""
        with self.transaction() as connection:
            self.dialect.lock_for_ddl(connection, "registry")
            worker_rows.ensure_table(self, connection)

    def forget_worker(self, worker_id: str) -> bool:
        """Delete a worker's heartbeat row (its clean shutdown)."""
        return worker_rows.forget(self, worker_id)

    def prune_workers(self, older_than: float = worker_rows.FORGET_AFTER_SECONDS) -> int:
        """Delete the rows of workers silent for more than `older_than` seconds."""
        return worker_rows.prune(self, older_than)

    def workers(
        self, queue: str | None = None, limit: int = worker_rows.MAX_LISTED
    ) -> list[WorkerInfo]:
        """Workers heard from in the last hour (live and stale), of one queue or all."""
        return worker_rows.listed(self, queue, limit)

    def worker_presence(self, queue: str) -> WorkerPresence | None:
        """Live and stale workers of a queue; None when `tablequeue_workers` cannot be read."""
        return worker_rows.presence(self, queue)

    def default_status_of(self, name: str) -> str:
        """The status new messages of this queue get now (it may be changed at runtime)."""
        return registry.default_status_of(self, name)

    def set_default_status(self, name: str, status: str) -> None:
        registry.set_default_status(self, name, status)

    def pause(self, name: str) -> FlowState:
        """Workers lease nothing from this queue until `resume` (enqueue still works; leased
        messages finish). Holds until `spec.paused` itself changes."""
        return flow_control.set_paused(self, names.queue_name(name), True)

    def resume(self, name: str) -> FlowState:
        return flow_control.set_paused(self, names.queue_name(name), False)

    def flow_state(self, name: str) -> FlowState:
        """The queue's pause and rate limit."""
        return flow_control.flow_state_of(self, names.queue_name(name))

    def flow_states(self) -> dict[str, FlowState]:
        """The pause and rate limit of every queue, by name."""
        return flow_control.flow_states(self)

    def delete_queue(self, name: str, drop_table: bool, owner: str | None = None) -> bool:
        """Forget a queue; drop its table only when asked (deletionPolicy: Delete). With
        `owner`, only if that Queue resource owns it (else nothing changes: False)."""
        return registry.delete_queue(self, name, drop_table, owner)

    def purge_audit(self, older_than: timedelta | None = audit.DEFAULT_KEEP_AUDIT) -> int:
        """Delete audit entries older than `older_than` (None: none) in bounded batches; any
        number of callers may run it at once. Workers do, every retention round."""
        return audit.purge_older(self, older_than)

    def audit_entries(
        self, *, queue: str | None = None, before_id: int | None = None, limit: int = 100
    ) -> list[AuditEntry]:
        """The audit trail, newest first: the changes people and tools made through the API,
        the admin UI and the CLI (at most `limit`, 1 to 1000; `before_id` pages back)."""
        if queue is not None:
            names.queue_name(queue)
        try:
            return audit.entries(self, queue=queue, before_id=before_id, limit=limit)
        except ValueError as error:
            raise InvalidInput(str(error)) from None


def _as_uuid(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def _tracking_id(tracking_id: str) -> uuid.UUID:
    try:
        return uuid.UUID(tracking_id)
    except ValueError:
        raise InvalidInput(f"invalid tracking id {tracking_id[:80]!r}: expected a UUID") from None


def connect(url: str, **options: Any) -> Database:
    """The database at `url`; nothing connects before its first use. Options: `timeouts`
    (`DatabaseTimeouts`: connect and statement bounds, else the environment's),
    `connect_backoff_seconds` (after a failed connect, connects fail at once for this long), and
    any keyword of SQLAlchemy's `create_engine`."""
    return Database(url, **options)
