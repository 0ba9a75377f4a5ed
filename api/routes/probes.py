"""Liveness, readiness and Prometheus metrics (not in the OpenAPI document)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.registry import CollectorRegistry

from ..dependencies import DatabaseArg

router = APIRouter(include_in_schema=False)

PROCESS_FIGURES = CollectorRegistry()
"""What the API's /metrics serves: the process's own figures, never a queue's (the workers'
counters live in the default registry, which a worker in the same process would fill)."""
ProcessCollector(registry=PROCESS_FIGURES)
PlatformCollector(registry=PROCESS_FIGURES)
GCCollector(registry=PROCESS_FIGURES)


@router.get("/livez")
async def livez() -> dict[str, str]:
    """On the event loop, never the thread pool: alive however long databases keep threads."""
    return {"status": "ok"}


@router.get("/readyz")
def readyz(database: DatabaseArg) -> dict[str, str]:
    database.ping()
    return {"status": "ok"}


@router.get("/metrics")
def metrics() -> Response:
    return Response(generate_latest(PROCESS_FIGURES), media_type=CONTENT_TYPE_LATEST)
