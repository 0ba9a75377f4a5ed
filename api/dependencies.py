"""What routes ask FastAPI for: the database, a queue named in the path, and an auth level.

`create_app` keeps the databases and the token rules in `app.state`; these are the only readers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Query, Request
from fastapi.params import Depends as DependsParam

from tablequeue import Actor, Database, Queue, act_as
from tablequeue.limits import MAX_ID

from .auth import Auth
from .databases import Databases

DATABASE_QUERY = (
    "The database to read (a name the API serves, see /databases); without it, the default one"
)


def get_databases(request: Request) -> Databases:
    """Every database `create_app` was given."""
    databases: Databases = request.app.state.databases
    return databases


def database_name(
    database: Annotated[str | None, Query(max_length=63, description=DATABASE_QUERY)] = None,
) -> str | None:
    """The `database` query parameter: the name of a database the API serves."""
    return database


DatabaseNameArg = Annotated[str | None, Depends(database_name)]
DatabasesArg = Annotated[Databases, Depends(get_databases)]


async def get_database(databases: DatabasesArg, name: DatabaseNameArg) -> AsyncIterator[Database]:
    """The database the `database` query parameter names, the default one without it, with one
    of its slots held while the route runs (`Databases.slot`)."""
    async with databases.slot(name) as database:
        yield database


def get_auth(request: Request) -> Auth:
    """The token rules `create_app` was given."""
    auth: Auth = request.app.state.auth
    return auth


DatabaseArg = Annotated[Database, Depends(get_database)]
AuthArg = Annotated[Auth, Depends(get_auth)]


def named_queue(name: str, database: DatabaseArg) -> Queue:
    """The queue named by the `{name}` path parameter (404 when it does not exist)."""
    return database.queue(name)


QueueArg = Annotated[Queue, Depends(named_queue)]
MessageIdArg = Annotated[int, Path(ge=1, le=MAX_ID)]


def require_reader(request: Request, auth: AuthArg) -> None:
    auth.reader(request)


def require_admin(request: Request, auth: AuthArg) -> None:
    auth.admin(request)


async def act_for_the_caller(request: Request, auth: AuthArg) -> None:
    """Changes this request makes are recorded in the audit trail as the caller's: the admin
    token's (or the open API's), via the UI when a browser sent it without a bearer token (a
    browser's change can only come from the admin UI's own pages: `csrf` refuses other
    origins). Async, so that it sets the actor in the request's own context, which the route's
    thread inherits."""
    act_as(
        Actor(
            who="admin token" if auth.enabled else "open API (no token configured)",
            via="ui" if _from_the_ui(request) else "api",
            address=request.client.host if request.client else None,
        )
    )


def _from_the_ui(request: Request) -> bool:
    """A browser (it sends Sec-Fetch-Site) without a bearer token: the admin UI's pages, signed
    in by their cookie (or an open API). A client sending the token itself is the API's, even
    when it adds the header."""
    return "sec-fetch-site" in request.headers and "authorization" not in request.headers


READER: list[DependsParam] = [Depends(require_reader)]
"""Route dependencies for reads: either token, or none when no token is configured."""
ADMIN: list[DependsParam] = [Depends(require_admin), Depends(act_for_the_caller)]
"""Route dependencies for changes: the admin token, or none when no token is configured; the
changes are the caller's in the audit trail."""


def auth_refusal(request: Request) -> HTTPException | None:
    """The 401/403 the matched route's token rule gives this request, if any.

    FastAPI parses a JSON body before it runs route dependencies; the handler of a broken body
    asks this first, so a request without a valid token learns nothing about the body's checks.
    """
    route = request.scope.get("route")
    for dependency in getattr(route, "dependencies", ()):
        if dependency.dependency in (require_reader, require_admin):
            try:
                dependency.dependency(request, get_auth(request))
            except HTTPException as refused:
                return refused
    return None
