"""The JSON API's routers, one per resource, and the probes."""

from . import jobs, messages, probes, queues, topics

ROUTERS = [probes.router, queues.router, messages.router, topics.router, jobs.router]

__all__ = ["ROUTERS"]
