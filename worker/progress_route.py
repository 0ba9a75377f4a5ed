"""Progress from HTTP handlers: `POST /progress/{trackingId}` on the worker's port.

The app POSTs `{"progress": <any JSON>}` while its handler call runs (the URL comes with each
call as the `Tablequeue-Progress-Url` header). The URL carries a key that only that call is
given: an HMAC of the message's tracking id and lease under a secret the worker draws at start,
so whoever else reaches the worker's port (it serves probes and metrics on every address) and
knows a tracking id (readers can list them) cannot write its progress. Answers: 204 stored;
400 not a tracking id, or a body that is not `{"progress": JSON}` in UTF-8; 403 no key or the
wrong key; 404 no handler of this worker runs that message; 409 the handler is being stopped,
or the worker's lease on the message is lost (cancelled, swept); 413 a body over 1 MiB; 503 the
database is away. Errors are `{"error": "..."}`. Progress is stored in the message's `progress`
column only while this worker's lease holds it, and the final answer's `progress`, if any,
replaces it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
import uuid
from typing import Any

from aiohttp import web

from tablequeue import Queue
from tablequeue.errors import Conflict, InvalidInput
from tablequeue.limits import MAX_JSON_DEPTH
from tablequeue.models import Message, check_json

from .database_health import DATABASE_ERRORS, DatabaseHealth
from .held import HeldMessages

ROUTE = "/progress/{tracking_id}"


def _error(status: int, text: str) -> web.Response:
    return web.json_response({"error": text}, status=status)


class ProgressRoute:
    """The route's view of the worker: set once the worker holds its queue (`attach`)."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.base_url = ""
        """`http://HOST:PORT/progress/`, as the app reaches the worker (set once it serves)."""
        self._secret = secrets.token_bytes(32)
        self._queue: Queue | None = None
        self._held: HeldMessages | None = None
        self._health: DatabaseHealth | None = None

    def _key(self, message: Message) -> str:
        lease = f"{message.tracking_id}/{message.correlation_id}".encode()
        return hmac.new(self._secret, lease, hashlib.sha256).hexdigest()

    def url_for(self, message: Message) -> str:
        """The URL given to the handler call of `message` (its own key in it)."""
        return f"{self.base_url}{message.tracking_id}?key={self._key(message)}"

    def attach(self, queue: Queue, held: HeldMessages, health: DatabaseHealth) -> None:
        self._queue, self._held, self._health = queue, held, health

    async def post(self, request: web.Request) -> web.Response:
        text = request.match_info["tracking_id"]
        try:
            tracking_id = uuid.UUID(text)
        except ValueError:
            return _error(400, f"{text[:100]!r} is not a tracking id (a UUID)")
        held, queue = self._held, self._queue
        entry = held.by_tracking_id.get(tracking_id) if held is not None else None
        if entry is None or queue is None:
            return _error(404, f"no handler of this worker is running message {tracking_id}")
        key = request.query.get("key", "")
        if not hmac.compare_digest(key.encode(), self._key(entry.message).encode()):
            return _error(
                403,
                "wrong or missing key: use the URL of the Tablequeue-Progress-Url "
                "header as it came with the call",
            )
        if entry.stop_reason is not None:
            reason = entry.stop_reason
            return _error(409, f"the handler of {tracking_id} is being stopped: {reason}")
        try:
            progress = _progress(await request.read())
        except InvalidInput as error:
            return _error(400, str(error))
        message = entry.message
        try:
            await asyncio.to_thread(
                queue.report_progress,
                message.id,
                progress,
                owner=self.owner,
                correlation_id=message.correlation_id,
            )
        except Conflict as error:
            return _error(409, str(error))
        except DATABASE_ERRORS as error:
            if self._health is not None:
                self._health.trouble(error)
            return _error(503, "database unavailable; try again")
        return web.Response(status=204)


def _progress(data: bytes) -> Any:
    try:
        text = data.decode()
    except UnicodeDecodeError as error:
        raise InvalidInput(f"the body is not UTF-8: {error.reason} at byte {error.start}") from None
    try:
        body = json.loads(text)
    except ValueError:
        raise InvalidInput('the body must be JSON: {"progress": ...}') from None
    except RecursionError:
        raise InvalidInput(f"progress nested more than {MAX_JSON_DEPTH} levels deep") from None
    if not isinstance(body, dict) or "progress" not in body:
        raise InvalidInput('the body must be a JSON object {"progress": ...}')
    progress = body["progress"]
    check_json(progress)
    return progress
