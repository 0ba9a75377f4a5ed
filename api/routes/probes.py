"""Liveness, readiness and Prometheus metrics (not in the OpenAPI document)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..dependencies import DatabaseArg

router = APIRouter(include_in_schema=False)


@router.get("/livez")
def livez() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
def readyz(database: DatabaseArg) -> dict[str, str]:
    database.ping()
    return {"status": "ok"}


@router.get("/metrics")
def metrics() -> Response:
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
