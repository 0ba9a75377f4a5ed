"""The JSON API's routers, one per resource, and the probes."""

from . import charts, jobs, messages, probes, queues, workers

ROUTERS = [
    probes.router,
    queues.router,
    messages.router,
    jobs.router,
    charts.router,
    workers.router,
]

__all__ = ["ROUTERS"]
