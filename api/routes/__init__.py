"""The JSON API's routers, one per resource, and the probes."""

from . import jobs, messages, probes, queues, schedules

ROUTERS = [probes.router, queues.router, schedules.router, messages.router, jobs.router]

__all__ = ["ROUTERS"]
