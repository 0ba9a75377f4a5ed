"""tablequeue: message queues that live in SQL tables.

from tablequeue import connect
db = connect("sqlite:///queues.db")
queue = db.queue("send-order-confirmation")
queue.enqueue({"OrderId": "A-1"}, message_id="A-1")
batch = queue.lease(owner="me", batch_size=10)
"""

from .database import Database, connect
from .errors import TableQueueError
from .models import (
    Completion,
    Delivery,
    Enqueued,
    Failure,
    LeaseBatch,
    Message,
    NewMessage,
    QueueStats,
)
from .queue import Queue

__all__ = [
    "Completion",
    "Database",
    "Delivery",
    "Enqueued",
    "Failure",
    "LeaseBatch",
    "Message",
    "NewMessage",
    "Queue",
    "QueueStats",
    "TableQueueError",
    "connect",
]
