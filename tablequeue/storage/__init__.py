"""The storage floor: connecting by URL, transactions, the registry of queues and the table
layout with its migrations. The queue operations (`tablequeue.queue`) sit on top of it."""

from .engine import Storage

__all__ = ["Storage"]
