"""The HTTP API and admin UI: `tablequeue api --db URL` (FastAPI, OpenAPI at /docs)."""

from tablequeue.extras import require

# Before anything imports FastAPI: without the extra, one error that says what to install.
require("tablequeue api", "api")

from .app import create_app  # noqa: E402

__all__ = ["create_app"]
