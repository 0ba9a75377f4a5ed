"""Python handlers for the worker tests, run inside real `tablequeue worker` processes.

Every handler records what it does as lines `EVENT MESSAGE_ID UNIX_TIME` in a file per process
under the folder named by the environment variable `TQ_RECORDS`, so a test can tell which
messages were started, finished or cancelled, and by which process. The message body scripts
the behaviour: `{"sleep": 1.5}` takes that long, `{"raise": "text"}` fails with that text
(`{"permanent": "text"}` with `PermanentFailure`),
`{"hang": true}` blocks (sync) until the file `release` appears in the records folder.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from tablequeue.models import Message
from tablequeue.worker import HandlerContext, Outcome, PermanentFailure

HANG_LIMIT_SECONDS = 120.0


def _records() -> Path:
    return Path(os.environ["TQ_RECORDS"])


def record(event: str, message_id: int) -> None:
    # One short write to a file opened for appending: lines of concurrent handlers do not mix.
    with open(_records() / f"{os.getpid()}.log", "a") as out:
        out.write(f"{event} {message_id} {time.time():.6f}\n")


def read_records(folder: Path) -> list[tuple[str, int, float, str]]:
    """All records of all processes: (event, message id, time, process file name)."""
    found = []
    for path in sorted(folder.glob("*.log")):
        for line in path.read_text().splitlines():
            event, message_id, at = line.split()
            found.append((event, int(message_id), float(at), path.stem))
    return found


def _body(message: Message) -> dict[str, Any]:
    return message.message if isinstance(message.message, dict) else {}


def handle(message: Message) -> dict[str, Any] | None:
    """Sync handler scripted by the body; returns the body's `outcome`, if any."""
    body = _body(message)
    record("start", message.id)
    if body.get("sleep"):
        time.sleep(float(body["sleep"]))
    if body.get("hang"):
        deadline = time.monotonic() + HANG_LIMIT_SECONDS
        while not (_records() / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    if body.get("raise"):
        raise RuntimeError(str(body["raise"]))
    if body.get("permanent"):
        raise PermanentFailure(str(body["permanent"]))
    record("done", message.id)
    outcome = body.get("outcome")
    return outcome if isinstance(outcome, dict) else None


async def handle_async(message: Message) -> Outcome | None:
    """Async handler scripted by the body; records `cancelled` when the worker stops it."""
    body = _body(message)
    record("start", message.id)
    try:
        await asyncio.sleep(float(body.get("sleep", 0)))
    except asyncio.CancelledError:
        record("cancelled", message.id)
        raise
    if body.get("raise"):
        raise RuntimeError(str(body["raise"]))
    if body.get("nul_error"):
        raise RuntimeError("a NUL \x00 in the error text")
    record("done", message.id)
    if body.get("nan_result"):
        return Outcome(result=float("nan"))  # no JSON column can store it
    if "result" in body:
        return Outcome(result=body["result"], progress=body.get("progress"))
    return None


def follow_up(message: Message, context: HandlerContext) -> None:
    """Enqueue a follow-up message into the queue `other`, through the handler's context."""
    context.database.queue("other").enqueue(
        {"followUpOf": message.id, "order": _body(message).get("order")},
        message_id=f"follow-up-{message.id}",
    )
    record("done", message.id)
