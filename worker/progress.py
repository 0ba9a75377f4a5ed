"""Progress from HTTP handlers: `POST /progress/{trackingId}` on the worker's port.

The app POSTs `{"progress": <any JSON>}` while its handler call runs (the URL comes with each
call as the `Tablequeue-Progress-Url` header). Answers: 204 stored; 400 not a tracking id, or a
body that is not `{"progress": JSON}`; 404 no handler of this worker runs that message; 409 the
handler is being stopped, or the worker's lease on the message is lost (cancelled, swept);
413 a body over 1 MiB; 503 the database is away. Errors are `{"error": "..."}`. Progress is
stored in the message's `progress` column only while this worker's lease holds it, and the
final answer's `progress`, if any, replaces it.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from aiohttp import web

from tablequeue.errors import Conflict, InvalidInput
from tablequeue.models import check_json
from tablequeue.queue import Queue

from .health import DATABASE_ERRORS, DatabaseHealth
from .held import HeldMessages

ROUTE = "/progress/{tracking_id}"


def _error(status: int, text: str) -> web.Response:
    return web.json_response({"error": text}, status=status)


class ProgressRoute:
    """The route's view of the worker: set once the worker holds its queue (`attach`)."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self._queue: Queue | None = None
        self._held: HeldMessages | None = None
        self._health: DatabaseHealth | None = None

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
        if entry.stop_reason is not None:
            reason = entry.stop_reason
            return _error(409, f"the handler of {tracking_id} is being stopped: {reason}")
        try:
            progress = _progress(await request.text())
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


def _progress(text: str) -> Any:
    try:
        body = json.loads(text)
    except ValueError:
        raise InvalidInput('the body must be JSON: {"progress": ...}') from None
    if not isinstance(body, dict) or "progress" not in body:
        raise InvalidInput('the body must be a JSON object {"progress": ...}')
    progress = body["progress"]
    check_json(progress)
    return progress
