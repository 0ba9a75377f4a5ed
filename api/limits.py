"""Limits of the HTTP layer; the limits of stored data (ids, priorities, ...) are the core's.

`BodySizeLimit` rejects request bodies over a size limit with 413, counting the bytes as they
arrive: the body is read up to the limit before the application sees it, so a chunked upload
without a Content-Length is stopped as soon as it passes the limit.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .http_errors import error_response

MAX_BODY_BYTES = 10 << 20
"""Default request body limit."""
MAX_BATCH = 10_000
"""Most messages enqueued, or ids named, in one request."""
MAX_PAGE = 1000
"""Most messages in one page of `GET /queues/{name}/messages`."""
MAX_REQUEST_HEAD_BYTES = 256 << 10
"""The request line and headers uvicorn buffers (its default, 16 KiB, dropped the connection of a
valid request: a predicate of 4,000 characters percent-encodes to up to 48 KB of URL)."""


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._reject(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message]), send)  # client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._reject(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body: Message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, _replay([body], then=receive), send)

    async def _reject(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(413, f"request body over {self.max_bytes} bytes")
        await response(scope, receive, send)


def _replay(messages: list[Message], then: Receive | None = None) -> Receive:
    pending = list(messages)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        if then is not None:
            return await then()  # e.g. http.disconnect while the response streams
        return {"type": "http.disconnect"}

    return receive
