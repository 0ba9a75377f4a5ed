"""The worker sidecar: lease messages, hand them to the app, record the outcome.

Python handlers are `pkg.module:function`, sync or async, taking the message (and optionally a
`HandlerContext`). Returning is success (optionally an `Outcome`); raising is failure, and
raising `PermanentFailure` sends the message straight to Error. `@batch_handler` marks a handler
that takes the messages of a lease in one call and returns one outcome per message.
"""

from tablequeue.extras import require

# Before anything imports aiohttp: without the extra, one error that says what to install.
require("tablequeue worker", "worker")

from tablequeue.errors import PermanentFailure  # noqa: E402

from .config import WorkerConfig  # noqa: E402
from .handlers import HandlerContext, Outcome, batch_handler  # noqa: E402
from .loop import Worker  # noqa: E402

__all__ = [
    "HandlerContext",
    "Outcome",
    "PermanentFailure",
    "Worker",
    "WorkerConfig",
    "batch_handler",
]
