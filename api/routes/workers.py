"""Workers (their heartbeats in `tablequeue_workers`) and a queue's health for outside checkers.

`GET /queues/{name}/health` needs no token: load balancers and uptime monitors have none. It
reveals whether a queue of that name exists, its health state and the reasons (how many messages
are in Error or Abandoned, how long the oldest due message waited, how many workers heartbeat)
and its backlog, never a message, a worker's host or the database's address.
"""

from __future__ import annotations

import sqlalchemy as sa
from fastapi import APIRouter
from fastapi.responses import JSONResponse

from tablequeue import WorkerInfo, errors, presence_of

from ..dependencies import READER, DatabaseArg, QueueArg
from ..http_errors import lost_table
from ..schemas import QueueHealth, WorkerList, WorkerOut

router = APIRouter(tags=["workers"])
HEALTH_RESPONSES: dict[int | str, dict[str, object]] = {
    503: {"model": QueueHealth, "description": "Unhealthy, or the database is unavailable"}
}


def _listing(workers: list[WorkerInfo]) -> WorkerList:
    present = presence_of(workers)
    return WorkerList(
        workers=[WorkerOut.model_validate(w.to_json()) for w in workers],
        live=present.live,
        stale=present.stale,
    )


@router.get("/workers", dependencies=READER)
def list_workers(database: DatabaseArg) -> WorkerList:
    """Workers of every queue heard from in the last hour: live ones, and stale ones (no
    heartbeat for `staleAfterSeconds`: killed, or cut off from the database)."""
    return _listing(database.workers())


@router.get("/queues/{name}/workers", dependencies=READER)
def queue_workers(database: DatabaseArg, queue: QueueArg) -> WorkerList:
    """The workers of one queue, live and stale."""
    return _listing(database.workers(queue.name))


@router.get("/queues/{name}/health", responses=HEALTH_RESPONSES)
def queue_health(database: DatabaseArg, name: str) -> JSONResponse:
    """200 while the queue is Healthy, Degraded or Disabled; 503 with the reasons when it is
    Unhealthy or its database cannot be read. Open without a token (for load balancers and
    uptime monitors); a few bounded queries."""
    try:
        queue = database.queue(name)
        try:
            stats = queue.stats()
        except sa.exc.DBAPIError:
            if (missing := lost_table(database, name)) is None:
                raise
            body = QueueHealth(queue=name, health="Unknown", reasons=[missing.public])
            return JSONResponse(body.model_dump(by_alias=True), 503)
        present = database.worker_presence(name)
    except errors.DatabaseUnavailable:
        body = QueueHealth(queue=name, health="Unknown", reasons=["database unavailable"])
        return JSONResponse(body.model_dump(by_alias=True), 503)
    workers = {"live": present.live, "stale": present.stale} if present else None
    body = QueueHealth.model_validate(
        {
            "queue": name,
            "health": stats.health,
            "reasons": stats.health_reasons,
            "backlog": stats.backlog,
            "oldest_pending_seconds": round(stats.oldest_pending_seconds, 3),
            "workers": workers,
        }
    )
    status = 503 if stats.health == "Unhealthy" else 200
    return JSONResponse(body.model_dump(by_alias=True), status)
