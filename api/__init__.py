"""The HTTP API and admin UI: `tablequeue api --db URL` (FastAPI, OpenAPI at /docs)."""

from .app import create_app

__all__ = ["create_app"]
