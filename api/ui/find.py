"""The header's search box: a message by its tracking id or message id, in any queue.

One hit opens the message's page; several are listed; none says so.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter
from fastapi.responses import RedirectResponse, Response

from tablequeue import Message, errors

from ..dependencies import DatabaseArg
from .rendering import RenderArg
from .signin import VIEWER

router = APIRouter(include_in_schema=False)


def message_link(queue: str, message: Message) -> str:
    return f"/ui/queues/{quote(queue)}/messages/{message.id}"


@router.get("/ui/find", dependencies=VIEWER)
def find_page(render: RenderArg, database: DatabaseArg, key: str = "") -> Response:
    found: list[tuple[str, Message]] = []
    problem = None
    try:
        found = database.find_messages(key)
    except errors.InvalidInput as error:
        problem = error.public
    if len(found) == 1:
        return RedirectResponse(message_link(*found[0]), status_code=303)
    return render(
        "find.html",
        title=f"Find {key.strip()}" if key.strip() else "Find",
        key=key.strip(),
        found=[(queue, message, message_link(queue, message)) for queue, message in found],
        problem=problem,
    )
