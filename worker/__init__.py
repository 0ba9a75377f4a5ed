"""The worker sidecar: lease messages, hand them to the app, record the outcome.

Python handlers are `pkg.module:function`, sync or async, taking the message (and optionally a
`HandlerContext`). Returning is success (optionally an `Outcome`); raising is failure, and
raising `PermanentFailure` sends the message straight to Error.
"""

from tablequeue.errors import PermanentFailure

from .config import WorkerConfig
from .handlers import HandlerContext, Outcome
from .loop import Worker

__all__ = ["HandlerContext", "Outcome", "PermanentFailure", "Worker", "WorkerConfig"]
