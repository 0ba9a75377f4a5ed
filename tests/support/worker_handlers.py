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
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from opentelemetry import trace

from tablequeue.models import Message
from tablequeue.worker import HandlerContext, Outcome, PermanentFailure, batch_handler

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
        text = path.read_text()
        # A line being appended may show in part (past a page boundary): up to the last newline.
        for line in text[: text.rfind("\n") + 1].splitlines():
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


def handle_until_cancelled(message: Message, context: HandlerContext) -> None:
    """Sync handler that works in steps until the worker stops it: records `cancelled` when it
    sees `context.cancelled`, then returns."""
    record("start", message.id)
    deadline = time.monotonic() + HANG_LIMIT_SECONDS
    while not context.cancelled and time.monotonic() < deadline:
        context.cancellation.wait(0.05)  # one step of the work
    record("cancelled" if context.cancelled else "done", message.id)


async def handle_async(message: Message) -> Outcome | None:
    """Async handler scripted by the body; records `cancelled` when the worker stops it."""
    body = _body(message)
    record("start", message.id)
    if "time_box" in body:  # asyncio.timeout needs the handler to run as a task of its own
        try:
            async with asyncio.timeout(float(body["time_box"])):
                await asyncio.sleep(3600)
        except TimeoutError:
            return Outcome(result="timed out")
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


@batch_handler
def handle_batch(messages: list[Message]) -> list[Any]:
    """Sync batch handler scripted by the bodies: records `start` for each message and `batch`
    with the call's size (under its first message's id); sleeps the longest `sleep`; a body
    `{"raise_all": ...}` fails the call, `{"wrong_count": true}` returns one outcome too many;
    otherwise each message's `raise` (returned as its exception), `permanent` or `result`."""
    bodies = [_body(message) for message in messages]
    for message in messages:
        record("start", message.id)
    record(f"batch{len(messages)}", messages[0].id)
    time.sleep(max((float(body.get("sleep", 0)) for body in bodies), default=0))
    if any(body.get("raise_all") for body in bodies):
        raise RuntimeError("the whole call failed")
    outcomes: list[Any] = []
    for message, body in zip(messages, bodies, strict=True):
        if body.get("raise"):
            outcomes.append(RuntimeError(str(body["raise"])))
        elif body.get("permanent"):
            outcomes.append(PermanentFailure(str(body["permanent"])))
        else:
            record("done", message.id)
            outcomes.append({"result": body["result"]} if "result" in body else None)
    if any(body.get("wrong_count") for body in bodies):
        outcomes.append(None)
    return outcomes


@batch_handler
async def handle_batch_async(messages: list[Message]) -> list[Outcome | None]:
    """Async batch handler: records `start` for each message, sleeps the longest `sleep`
    (records `cancelled` for each when the worker stops the call), then `done` for each."""
    for message in messages:
        record("start", message.id)
    try:
        await asyncio.sleep(max(float(_body(message).get("sleep", 0)) for message in messages))
    except asyncio.CancelledError:
        for message in messages:
            record("cancelled", message.id)
        raise
    for message in messages:
        record("done", message.id)
    return [None] * len(messages)


@batch_handler
def batch_with_context(messages: list[Message], context: HandlerContext) -> None:
    """A batch handler that asks for a context it cannot get: refused when the worker starts."""


def follow_up(message: Message, context: HandlerContext) -> None:
    """Enqueue a follow-up message into the queue `other`, through the handler's context."""
    context.database.queue("other").enqueue(
        {"followUpOf": message.id, "order": _body(message).get("order")},
        message_id=f"follow-up-{message.id}",
    )
    record("done", message.id)


app_log = logging.getLogger("app.orders")


def _wait_for_starts(count: int) -> None:
    """Block until `count` handlers of this test have started (60 s at most)."""
    deadline = time.monotonic() + HANG_LIMIT_SECONDS / 2
    while time.monotonic() < deadline:
        if sum(1 for event, *_ in read_records(_records()) if event == "start") >= count:
            return
        time.sleep(0.02)
    raise RuntimeError(f"{count} handlers never ran together")


def log_together(message: Message) -> None:
    """Sync: logs with the app's own logger before and after `together` handlers all started,
    so the second line of each is written while the others run."""
    body = _body(message)
    app_log.info("app started", extra={"n": body.get("n")})
    record("start", message.id)
    _wait_for_starts(int(body.get("together", 1)))
    app_log.info("app running with the others", extra={"n": body.get("n")})
    record("done", message.id)


async def log_together_async(message: Message) -> None:
    """Async twin of `log_together` (the handlers share the worker's event loop)."""
    body = _body(message)
    app_log.info("app started", extra={"n": body.get("n")})
    record("start", message.id)
    await asyncio.to_thread(_wait_for_starts, int(body.get("together", 1)))
    app_log.info("app running with the others", extra={"n": body.get("n")})
    record("done", message.id)


def traced(message: Message) -> None:
    """Records the OpenTelemetry context current in the handler (`traces.jsonl`), opens a span
    of its own (exported if the app set a provider), and fails if the body says `raise`."""
    span = trace.get_current_span().get_span_context()
    with open(_records() / "traces.jsonl", "a") as out:
        out.write(
            json.dumps(
                {
                    "id": message.id,
                    "trace_id": trace.format_trace_id(span.trace_id),
                    "span_id": trace.format_span_id(span.span_id),
                }
            )
            + "\n"
        )
    with trace.get_tracer("app").start_as_current_span("app work"):
        if _body(message).get("raise"):
            raise RuntimeError(str(_body(message)["raise"]))


def read_traces(folder: Path) -> dict[int, dict[str, Any]]:
    """What `traced` saw, by message id."""
    path = folder / "traces.jsonl"
    if not path.exists():
        return {}
    return {row["id"]: row for row in map(json.loads, path.read_text().splitlines())}


def context_seen(message: Message, context: HandlerContext) -> None:
    """Records the caller's correlation id, label and the lease batch id its context gives
    (`context.jsonl`), and logs a line with the app's own logger while it runs."""
    seen = {
        "id": message.id,
        "correlation_id": context.correlation_id,
        "label": context.label,
        "lease_batch_id": context.lease_batch_id,
    }
    with open(_records() / "context.jsonl", "a") as out:
        out.write(json.dumps(seen) + "\n")
    app_log.info("app saw its context", extra={"n": _body(message).get("n")})
