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

A server without tokens that listens on loopback only (`tablequeue dev`, `tablequeue api` as it
starts) also refuses every request whose `Host` is not a loopback name: a page on a domain that
its owner points at 127.0.0.1 (DNS rebinding) is same-origin to the browser, and would read and
change everything; its requests name that domain as their Host.
"""

from __future__ import annotations

import ipaddress

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


def is_loopback(host: str) -> bool:
    """Whether a host name or address (as `--host` or a Host header gives it) is this machine."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(host: bytes) -> str:
    text = host.decode("latin-1")
    if text.startswith("["):  # [::1]:8000
        return text[: text.find("]") + 1]
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


class CrossOriginGuard:
    def __init__(self, app: ASGIApp, loopback_only: bool = False) -> None:
        self.app = app
        self.loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            why = None
            if self.loopback_only and not is_loopback(_host_name(headers.get(b"host", b""))):
                host = headers.get(b"host", b"").decode("latin-1")[:100]
                why = (
                    f"Host {host!r} is not this machine: a server without tokens that listens on "
                    "loopback answers only localhost, 127.0.0.1 and [::1]"
                )
            elif scope["method"] not in SAFE_METHODS and (reason := cross_origin(headers)):
                why = (
                    f"cross-origin request refused: {reason}; changes come from this server's "
                    "own pages or from programs"
                )
            if why is not None:
                await error_response(403, why)(scope, receive, send)
                return
        await self.app(scope, receive, send)
