"""Refusing cross-origin changes: no other web page can make a browser change anything here.

A page on another origin (another host, or only another port of the same host, which browsers
count as the same *site*, so a SameSite cookie still goes along) can make a browser send a form
POST or a simple fetch to the API, with the sign-in cookie. Every request that may change
something (any method but GET, HEAD and OPTIONS) is therefore refused with 403 when the browser
says it comes from another origin:
- `Sec-Fetch-Site` (sent by every current browser) must be `same-origin` (or `none`: typed by
  the user);
- else `Origin` (sent by browsers on cross-origin requests) must name this server, as the
  `Host` (or a proxy's `X-Forwarded-Host`) header does.
Programs (the CLI, curl, client libraries) send neither header and are not affected. This holds
with and without tokens: a local `tablequeue dev` is protected as well.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from .http_errors import error_response

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def cross_origin(headers: dict[bytes, bytes]) -> str | None:
    """Why a request with these headers comes from another origin, or None when it does not."""
    fetch_site = headers.get(b"sec-fetch-site")
    if fetch_site is not None:
        if fetch_site in (b"same-origin", b"none"):
            return None
        return f"Sec-Fetch-Site is {fetch_site.decode('latin-1')!r}"
    origin = headers.get(b"origin")
    if origin is None:
        return None
    own_hosts = {headers.get(b"host", b""), headers.get(b"x-forwarded-host", b"")} - {b""}
    if origin.partition(b"://")[2] in own_hosts:
        return None
    return f"Origin {origin.decode('latin-1')!r} is not this server"


class CrossOriginGuard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            why = cross_origin(dict(scope["headers"]))
            if why is not None:
                refusal = error_response(
                    403,
                    f"cross-origin request refused: {why}; changes come from this server's "
                    "own pages or from programs",
                )
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)
