"""The queue floor, on top of storage: the `Queue` handle and its operations by area
(enqueue, settle, admin, read)."""

from . import publish, subscribe
from .facade import Queue

__all__ = ["Queue", "publish", "subscribe"]
