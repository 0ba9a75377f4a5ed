"""Handlers: POST to the app on localhost, or call a Python function.

HTTP contract (docs/guides/workers.md): the body is `{id, messageId, message, previousMessage,
attempts, headers, correlationId, label, leaseBatchId, trackingId, groupKey}` (`correlationId`: the
caller's, given at enqueue; `leaseBatchId`: the worker's lease batch); 2xx is success with an
optional JSON body `{processAgainAt, result, progress}`; anything else or a timeout is a failure
with the response text as the error, and a JSON error body with `"retry": false` sends the
message to Error. The request carries the trace context current in the worker as `traceparent`
(and `tracestate`) headers, `Tablequeue-Progress-Url`, where the app may POST progress while it
runs (`progress.py`), and, when the message has them, `Tablequeue-Correlation-Id` and
`Tablequeue-Label` (percent-encoded UTF-8, as header values are ASCII). Python handlers report
progress through `HandlerContext.report_progress`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import inspect
import os
import re
import sys
import threading
import traceback
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import aiohttp

from tablequeue import Database, Queue, trace_context
from tablequeue.errors import InvalidInput, PermanentFailure
from tablequeue.models import Message, check_json

MAX_ERROR_TEXT = 4000
PYTHON_HANDLER = re.compile(r"^python:([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*):([A-Za-z_]\w*)$")


@dataclass(frozen=True)
class Outcome:
    """What a handler may return on success."""

    process_again_at: datetime | None = None
    result: Any = None
    progress: Any = None


class HandlerFailed(Exception):
    def __init__(self, error: str, permanent: bool = False) -> None:
        super().__init__(error)
        self.error = error
        self.permanent = permanent


@dataclass
class HandlerContext:
    """What a Python handler can use besides its message: the core API on the same database."""

    database: Database
    queue: Queue
    message: Message
    owner: str | None = None
    """The worker's lease owner name; progress is stored only while its lease holds the message."""
    cancellation: threading.Event = field(default_factory=threading.Event)
    """Set when the worker stops the handler: the message was cancelled or its lease lost, its
    time limit passed, or the grace period at shutdown ended. An async handler is cancelled
    (`CancelledError`) as well; a sync one runs on a thread nobody can stop, so it checks
    `cancelled` between steps, or waits on this event instead of sleeping, and returns."""

    @property
    def cancelled(self) -> bool:
        return self.cancellation.is_set()

    @property
    def correlation_id(self) -> str | None:
        """The correlation id the caller gave the message at enqueue (None if none)."""
        return self.message.app_correlation_id

    @property
    def label(self) -> str | None:
        """The short human name the caller gave the message (None if none)."""
        return self.message.label

    @property
    def group_key(self) -> str | None:
        """The message's group key (`spec.groups`; None if it has none)."""
        return self.message.group_key

    @property
    def lease_batch_id(self) -> str | None:
        """The id of the worker's lease batch that handed over the message."""
        return self.message.correlation_id

    def report_progress(self, progress: Any) -> None:
        """Store progress now, readable by tracking id while the handler runs (blocking call).

        Raises `tablequeue.errors.Conflict` once the worker's lease on the message is lost
        (cancelled, swept): the handler may stop then."""
        self.queue.report_progress(
            self.message.id,
            progress,
            owner=self.owner,
            correlation_id=self.message.correlation_id,
        )


def _trim(text: str) -> str:
    """At most MAX_ERROR_TEXT characters: the start and the end (a traceback's exception line)."""
    if len(text) <= MAX_ERROR_TEXT:
        return text
    half = (MAX_ERROR_TEXT - len(TRIMMED)) // 2
    return text[:half] + TRIMMED + text[-half:]


TRIMMED = "\n  [...]\n"  # indented: read as frames left out, not as the exception line


def _handler_traceback(error: BaseException) -> str:
    """The traceback of an exception a Python handler raised, from the handler's own code on:
    the frames of this module that called it (the await, the thread of a sync handler) are not
    the user's to read."""
    frames = error.__traceback__
    while frames is not None and frames.tb_frame.f_globals.get("__name__") == __name__:
        frames = frames.tb_next
    return "".join(traceback.format_exception(type(error), error, frames))


HTTP_PAYLOAD_FIELDS = (
    "id",
    "messageId",
    "message",
    "previousMessage",
    "attempts",
    "headers",
    "correlationId",
    "label",
    "leaseBatchId",
    "trackingId",
    "groupKey",
)
"""What an HTTP handler gets of a message, in this order, as the API shows it (`to_json`)."""


def payload(message: Message) -> dict[str, Any]:
    return message.to_json(HTTP_PAYLOAD_FIELDS)


def outcome_from(data: Any) -> Outcome | None:
    """Read `{processAgainAt, result, progress}` (or an Outcome) returned by a handler."""
    if data is None:
        return None
    if isinstance(data, Outcome):
        again, result, progress = data.process_again_at, data.result, data.progress
    elif isinstance(data, dict):
        again = data.get("processAgainAt", data.get("process_again_at"))
        result, progress = data.get("result"), data.get("progress")
    else:
        raise HandlerFailed(f"handler returned {type(data).__name__}; expected an object or None")
    if isinstance(again, str):
        try:
            again = datetime.fromisoformat(again)
        except ValueError:
            raise HandlerFailed(f"processAgainAt {again!r} is not an ISO 8601 time") from None
    if again is not None and (not isinstance(again, datetime) or again.tzinfo is None):
        raise HandlerFailed("processAgainAt needs an ISO 8601 time with a zone")
    for name, value in (("result", result), ("progress", progress)):
        try:
            check_json(value)  # what the database cannot store must not block the batch
        except ValueError as error:
            raise HandlerFailed(f"handler returned an invalid {name}: {error}") from None
    return Outcome(again, result, progress)


PROGRESS_URL_HEADER = "Tablequeue-Progress-Url"
CORRELATION_ID_HEADER = "Tablequeue-Correlation-Id"
LABEL_HEADER = "Tablequeue-Label"
APP_CHECK_TIMEOUT = aiohttp.ClientTimeout(total=2.0)
"""The readiness GET: an app that takes longer does not answer yet."""
NOT_READY_STATUSES = frozenset({502, 503, 504})
"""Answers that say the app is not there yet (a proxy in front of it, or the app itself saying
so); any other status comes from an app that listens."""


def _header_value(text: str) -> str:
    """Text as an ASCII header value: printable ASCII as is, the rest percent-encoded UTF-8."""
    return urllib.parse.quote(text, safe=_PRINTABLE_ASCII)


_PRINTABLE_ASCII = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")


class AppUnreachable(HandlerFailed):
    """The request never reached the app (nothing listens, cannot connect). With the app
    readiness check on, not the message's failure: the worker gives the message back and waits
    for the app (`appgate.py`); with it off, a failure as any other."""


class HttpHandler:
    def __init__(self, url: str, timeout: float) -> None:
        self.url = url
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        self.progress_url: Callable[[Message], str] | None = None
        """Where the app reports progress on a message (the worker's port, with a key)."""

    def headers(self, message: Message) -> dict[str, str]:
        """The request's headers: the progress URL, the caller's correlation id and label, the
        current trace context (each if any)."""
        headers: dict[str, str] = {}
        if self.progress_url is not None:
            headers[PROGRESS_URL_HEADER] = self.progress_url(message)
        if message.app_correlation_id is not None:
            headers[CORRELATION_ID_HEADER] = _header_value(message.app_correlation_id)
        if message.label is not None:
            headers[LABEL_HEADER] = _header_value(message.label)
        context = trace_context.current_headers()
        if context is not None:
            headers.update(context)
        return headers

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self.timeout)
        return self._session

    def app_url(self, path: str) -> str:
        """`path` on the handler's scheme, host and port."""
        parts = urllib.parse.urlsplit(self.url)
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))

    async def not_ready(self, url: str) -> str | None:
        """Why the app at `url` does not take requests yet, None when it does: any answer to a
        GET but 502, 503 and 504 is an app that listens (a 404, or the 501 of a server without
        GET handlers); refused, unreachable, or no answer in time is not yet."""
        try:
            async with self._client().get(url, timeout=APP_CHECK_TIMEOUT) as response:
                if response.status in NOT_READY_STATUSES:
                    return f"HTTP {response.status}"
                return None
        except TimeoutError:
            return f"no answer within {APP_CHECK_TIMEOUT.total:g} s"
        except (aiohttp.ClientError, OSError) as error:
            return str(error) or type(error).__name__

    async def __call__(self, message: Message, context: HandlerContext | None) -> Outcome | None:
        try:
            async with self._client().post(
                self.url, json=payload(message), headers=self.headers(message)
            ) as response:
                text = await response.text(errors="replace")  # the text is for people
                body = _json_or_none(text, response.content_type)
                if 200 <= response.status < 300:
                    return outcome_from(body)
                permanent = isinstance(body, dict) and body.get("retry") is False
                raise HandlerFailed(_trim(f"HTTP {response.status}: {text}"), permanent)
        except TimeoutError:
            raise HandlerFailed(f"handler at {self.url} did not answer in time") from None
        except aiohttp.ClientError as error:
            if _never_reached(error):
                raise AppUnreachable(f"handler at {self.url} unreachable: {error}") from None
            raise HandlerFailed(f"handler at {self.url} unreachable: {error}") from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def _never_reached(error: aiohttp.ClientError) -> bool:
    """The connection was never made (refused, no route, DNS): the app got nothing. Not a
    timeout, a reset after the request was sent, nor a TLS failure (something answered)."""
    return isinstance(error, aiohttp.ClientConnectorError) and not isinstance(
        error, aiohttp.ClientSSLError
    )


def _json_or_none(text: str, content_type: str) -> Any:
    import json

    if not text.strip() or "json" not in content_type:
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise HandlerFailed(_trim(f"handler answered invalid JSON: {text}")) from None


BATCH_MARK = "__tablequeue_batch__"


def batch_handler(function: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a Python handler as taking a batch: `handler(messages) -> outcomes`, one call for
    the messages of a lease (at most `concurrency` of them), one outcome per message, in order
    (docs/guides/workers.md, "Batch handlers")."""
    setattr(function, BATCH_MARK, True)
    return function


BatchOutcome = Outcome | HandlerFailed | None
"""What a batch handler's call gives each message: success (an outcome or None), or a failure."""


class PythonHandler:
    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.wants_context = len(inspect.signature(function).parameters) >= 2
        self.is_async = inspect.iscoroutinefunction(function)
        self.batch = bool(getattr(function, BATCH_MARK, False))
        if self.batch and self.wants_context:
            raise InvalidInput(
                f"batch handler {getattr(function, '__name__', function)!r} takes one argument "
                "(the list of messages); a batch handler gets no HandlerContext"
            )

    async def call_batch(self, messages: list[Message]) -> list[BatchOutcome]:
        """Call a batch handler: one outcome per message. Raises `HandlerFailed` for the whole
        batch when the call raises or returns something else than one outcome per message."""
        try:
            if self.is_async:
                returned = await self.function(list(messages))
            else:
                returned = await _in_own_thread(self.function, list(messages))
        except Exception as error:
            raise _failure(error) from None
        if not isinstance(returned, list | tuple) or len(returned) != len(messages):
            got = f"{len(returned)} items" if isinstance(returned, list | tuple) else "not a list"
            raise HandlerFailed(
                f"batch handler returned {type(returned).__name__} ({got}); expected a list of "
                f"{len(messages)} outcomes, one per message"
            )
        outcomes: list[BatchOutcome] = []
        for item in returned:
            if isinstance(item, Exception):
                outcomes.append(_failure(item, traced=False))
                continue
            try:
                outcomes.append(outcome_from(item))
            except HandlerFailed as failed:
                outcomes.append(failed)
        return outcomes

    async def __call__(self, message: Message, context: HandlerContext | None) -> Outcome | None:
        """`context`: given when the function takes it (`wants_context`), else None."""
        args = (message, context) if context is not None else (message,)
        try:
            if self.is_async:
                returned = await self.function(*args)
            else:
                returned = await _in_own_thread(self.function, *args)
        except asyncio.CancelledError:
            if context is not None:
                context.cancellation.set()
            raise
        except PermanentFailure as error:
            raise HandlerFailed(_trim(f"{type(error).__name__}: {error}"), permanent=True) from None
        except HandlerFailed:
            raise
        except Exception as error:
            raise HandlerFailed(_trim(_handler_traceback(error))) from None
        return outcome_from(returned)

    async def close(self) -> None:
        pass


def _failure(error: Exception, traced: bool = True) -> HandlerFailed:
    """A handler's exception as the message's failure (`PermanentFailure`: to Error at once);
    `traced`: with the traceback (it was raised), else its type and text (it was returned)."""
    if isinstance(error, HandlerFailed):
        return error
    if isinstance(error, PermanentFailure):
        return HandlerFailed(_trim(f"{type(error).__name__}: {error}"), permanent=True)
    if traced:
        return HandlerFailed(_trim(_handler_traceback(error)))
    return HandlerFailed(_trim(f"{type(error).__name__}: {error}"))


async def _in_own_thread(function: Callable[..., Any], *args: Any) -> Any:
    """Run a sync handler on a daemon thread of its own, not on the loop's shared executor.

    A thread cannot be stopped: one that hangs past the execution timeout or the grace period
    must neither hold up the worker's exit (the executor is joined at exit) nor take the
    threads the worker needs for its database calls (lease extension, settling).
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def deliver(result: Any, error: BaseException | None) -> None:
        if future.done():  # cancelled: timed out, lease lost or worker stopped
            return
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)

    def run() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (function(*args), None)
        except BaseException as error:
            outcome = (None, error)
        with contextlib.suppress(RuntimeError):  # the loop is gone: the worker has exited
            loop.call_soon_threadsafe(deliver, *outcome)

    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(run,), name="handler", daemon=True).start()
    return await future


def load_handler(spec: str, timeout: float) -> HttpHandler | PythonHandler:
    """`http://127.0.0.1:8080/process` or `python:pkg.module:function`."""
    if spec.startswith(("http://", "https://")):
        return HttpHandler(spec, timeout)
    match = PYTHON_HANDLER.fullmatch(spec)
    if not match:
        raise InvalidInput(
            f"invalid handler {spec[:100]!r}: use http://127.0.0.1:PORT/PATH "
            "or python:package.module:function"
        )
    module_name, function_name = match.groups()
    if "" not in sys.path and os.getcwd() not in sys.path:
        # The `tablequeue` console script (the sidecar's command) does not put the working
        # folder on the path as `python -m` does: the app's own modules are found there too.
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise InvalidInput(f"handler module {module_name!r} cannot be imported: {error}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise InvalidInput(f"handler {module_name}:{function_name} is not a function")
    return PythonHandler(function)
