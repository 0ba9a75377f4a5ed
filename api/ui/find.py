"""The header's search box: a message by its tracking id or message id, in any queue of any
database the API serves.

One hit opens the message's page; several are listed; none says so. A database that cannot be
searched is named with its error.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter
from fastapi.responses import RedirectResponse, Response

from tablequeue import Message, errors

from ..dependencies import DatabasesArg
from .rendering import RenderArg
from .signin import VIEWER

router = APIRouter(include_in_schema=False)


def message_link(render: RenderArg, database: str, queue: str, message: Message) -> str:
    return render.in_database(f"/ui/queues/{quote(queue)}/messages/{message.id}", database)


@router.get("/ui/find", dependencies=VIEWER)
def find_page(render: RenderArg, databases: DatabasesArg, key: str = "") -> Response:
    found: list[tuple[str, str, Message]] = []
    unreachable: list[tuple[str, str]] = []
    problem = None
    try:
        found, unreachable = databases.find_messages(key)
    except errors.InvalidInput as error:
        problem = error.public
    if len(found) == 1 and not unreachable:
        return RedirectResponse(message_link(render, *found[0]), status_code=303)
    return render(
        "find.html",
        title=f"Find {key.strip()}" if key.strip() else "Find",
        key=key.strip(),
        several=databases.several,
        found=[(db, queue, m, message_link(render, db, queue, m)) for db, queue, m in found],
        unreachable=unreachable,
        problem=problem,
    )
