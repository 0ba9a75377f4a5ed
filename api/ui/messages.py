"""The message page: everything stored about one message, with its edit, cancel and delete."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from tablequeue import errors, names
from tablequeue.limits import ATTEMPTS_KEPT

from ..dependencies import DatabaseArg
from .paging import message_id as parse_message_id
from .queues import STATUS_CHOICES
from .rendering import RenderArg
from .signin import VIEWER

router = APIRouter(include_in_schema=False)


@router.get("/ui/queues/{name}/messages/{message_id}", dependencies=VIEWER)
def message_page(render: RenderArg, database: DatabaseArg, name: str, message_id: str) -> Response:
    queue = database.queue(name)
    number = parse_message_id(message_id)
    if number is None:
        raise errors.MessageNotFound(f"no message with id {message_id[:20]!r} in {name!r}")
    message = queue.get(number)
    return render(
        "message.html",
        title=f"{name} #{message.id}",
        queue=queue,
        m=message,
        attempts=queue.attempts(message),
        attempts_kept=ATTEMPTS_KEPT,
        status_choices=[s for s in STATUS_CHOICES if s != message.status],
        unfinished=message.status not in names.FINAL,
    )
