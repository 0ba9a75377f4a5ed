"""The JSON API's routers, one per resource, and the probes."""

from . import (
    audit,
    charts,
    databases,
    jobs,
    messages,
    probes,
    queues,
    schedules,
    topics,
    workers,
)

ROUTERS = [
    probes.router,
    databases.router,
    queues.router,
    schedules.router,
    messages.router,
    topics.router,
    jobs.router,
    charts.router,
    workers.router,
    audit.router,
]

__all__ = ["ROUTERS"]
