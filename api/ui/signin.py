"""Signing in to the admin UI: the token form, the cookie it sets, and the page guard.

The sign-in form is the only form the server handles itself; it sets the `tablequeue_token`
cookie that the JSON API also accepts, so the pages' scripts call the API with the same rights.
"""

from __future__ import annotations

from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.params import Depends as DependsParam
from fastapi.responses import RedirectResponse, Response

from ..auth import COOKIE
from ..dependencies import AuthArg
from .rendering import RenderArg

router = APIRouter(include_in_schema=False)


def signed_in(request: Request, auth: AuthArg) -> None:
    """Pages need a valid token when tokens are configured; else go to the sign-in page."""
    if not auth.enabled:
        return
    try:
        auth.reader(request)
    except HTTPException:
        here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise HTTPException(
            303, "sign in first", headers={"Location": "/ui/login?next=" + quote(here)}
        ) from None


VIEWER: list[DependsParam] = [Depends(signed_in)]
"""Route dependencies of every page but the sign-in page."""


def safe_next(target: str | None) -> str:
    """Only redirect back into the UI after sign-in (never to another site)."""
    if target and target.startswith("/ui") and not target.startswith("//"):
        return target
    return "/ui"


@router.get("/ui/login")
def login_page(render: RenderArg, auth: AuthArg, next: str | None = None) -> Response:
    if not auth.enabled:
        return RedirectResponse(safe_next(next), status_code=303)
    return render("login.html", title="Sign in", next=safe_next(next), error=None)


@router.post("/ui/login")
async def login(request: Request, render: RenderArg, auth: AuthArg) -> Response:
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    token = form.get("token", [""])[0].strip()
    target = safe_next(form.get("next", [""])[0])
    if not auth.accepts(token):
        error = "That token is not valid here." if auth.enabled else "Sign-in is not needed."
        return render("login.html", 401, title="Sign in", next=target, error=error)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        COOKIE,
        token,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


@router.post("/ui/logout")
def logout() -> Response:
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response
