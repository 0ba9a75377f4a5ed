"""The worker's options: the core's `WorkerSettings`, under the name the worker code uses.

Flags, `TABLEQUEUE_*` variables and the operator's sidecar environment all derive from that one
model (`tablequeue.settings.worker`); `resolve` fills what is unset from the queue's settings.
"""

from tablequeue.settings.worker import WorkerSettings as WorkerConfig

__all__ = ["WorkerConfig"]
