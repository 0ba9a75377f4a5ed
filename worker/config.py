"""The worker's options: the core's `WorkerSettings`, under the name the worker code uses.

Flags, `TABLEQUEUE_*` variables and the operator's sidecar environment all derive from that one
model (`tablequeue.worker_settings`); `resolve` fills what is unset from the queue's settings.
"""

from tablequeue.worker_settings import WorkerSettings as WorkerConfig

__all__ = ["WorkerConfig"]
