"""The interactive API docs at /docs: FastAPI's Swagger UI page, with Swagger UI's script and
styles served from the UI's static files (vendored, `static/VENDORED.md`) rather than a CDN, so
the page works without a network."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

STATIC = "/ui/static"
router = APIRouter(include_in_schema=False)


@router.get("/docs")
def swagger_ui() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="tablequeue: API",
        swagger_js_url=f"{STATIC}/swagger-ui-bundle.js",
        swagger_css_url=f"{STATIC}/swagger-ui.css",
        swagger_favicon_url="data:,",  # no icon, and no request for one
    )
