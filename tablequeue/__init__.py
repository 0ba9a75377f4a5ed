"""tablequeue: message queues that live in SQL tables.

from tablequeue import connect
db = connect("sqlite:///queues.db")
queue = db.queue("send-order-confirmation")
queue.enqueue({"OrderId": "A-1"}, message_id="A-1")
batch = queue.lease(owner="me", batch_size=10)
"""

from .actor import Actor, act_as, acting_as
from .database import Database, connect
from .errors import TableQueueError
from .health import WorkerPresence
from .models import (
    AuditEntry,
    Completion,
    Delivery,
    Enqueued,
    Failure,
    FlowState,
    Heartbeat,
    LeaseBatch,
    Message,
    NewMessage,
    QueueStats,
    TopicSubscription,
    WorkerInfo,
)
from .queue import Queue
from .storage.tenant_urls import tenant_url
from .storage.urls import engine_name, listen_url
from .storage.workers import presence_of

__all__ = [
    "Actor",
    "AuditEntry",
    "Completion",
    "Database",
    "Delivery",
    "Enqueued",
    "Failure",
    "FlowState",
    "Heartbeat",
    "LeaseBatch",
    "Message",
    "NewMessage",
    "Queue",
    "QueueStats",
    "TableQueueError",
    "TopicSubscription",
    "WorkerInfo",
    "WorkerPresence",
    "act_as",
    "acting_as",
    "connect",
    "engine_name",
    "listen_url",
    "presence_of",
    "tenant_url",
]
