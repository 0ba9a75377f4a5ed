"""`GET /drained`: answers once the worker was asked to stop and is done with its handlers.

Meant as the app container's `preStop` hook (`httpGet` on the worker's port): the kubelet sends
the app its SIGTERM only after the hook returns, so the app keeps serving the requests of the
handlers that are still running while the worker drains. The kubelet starts the hook and sends
the worker its SIGTERM at the same moment, in no set order: a request that comes first waits for
the SIGTERM, then for the drain. It never waits longer than the grace period + DRAIN_MARGIN
seconds (then it answers 200 all the same, saying so), and the worker's process exits only once
every such request has its answer written (`answered`). An idle worker drains at once, often
before the kubelet's hook has connected: it waits for the hooks it was told of (`prestop_hooks`,
at most HOOK_WAIT seconds) so that none fails on a closed port (a FailedPreStopHook event).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from aiohttp import web

log = logging.getLogger("tablequeue.worker")
ROUTE = "/drained"
WAITING = "GET /drained: waiting until the worker has stopped and finished its handlers"
DRAIN_MARGIN = 10.0
"""Seconds past the grace period a `/drained` request waits at most."""
HOOKS_AWAITED = "drained: waiting for the app containers' preStop requests to /drained"
HOOK_WAIT = 5.0
"""Seconds a drained worker waits at most for the preStop requests it expects."""


class DrainRoute:
    """The `/drained` route of one worker: `drained` is set when its shutdown is done;
    `grace_period()` is the worker's grace period in seconds."""

    def __init__(self, drained: asyncio.Event, grace_period: Callable[[], float]) -> None:
        self.drained = drained
        self.grace_period = grace_period
        self._answering: set[asyncio.Task[object]] = set()
        self._answered = 0

    async def get(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            self._answering.add(task)
        try:
            limit = self.grace_period() + DRAIN_MARGIN
            if not self.drained.is_set():
                log.info(WAITING, extra={"limit_seconds": limit})
            try:
                await asyncio.wait_for(self.drained.wait(), timeout=limit)
                text = "drained\n"
            except TimeoutError:
                text = f"not drained after {limit:g}s (grace period + {DRAIN_MARGIN:g}s): go on\n"
                log.warning("GET /drained: not drained in time, answered anyway")
            response = web.Response(text=text, headers={"Connection": "close"})
            await response.prepare(request)
            await response.write_eof()  # written before the process may exit
            self._answered += 1
            return response
        finally:
            if task is not None:
                self._answering.discard(task)

    async def answered(self, expected: int = 0, timeout: float = HOOK_WAIT) -> None:
        """Wait (at most `timeout` seconds) until every pending `/drained` request has its
        answer written and `expected` requests were answered in all: call once `drained` is
        set, before the server stops."""
        if self._answered < expected:
            log.info(HOOKS_AWAITED, extra={"expected": expected, "answered": self._answered})
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._all_out(expected), timeout)

    async def _all_out(self, expected: int) -> None:
        while self._answering or self._answered < expected:
            await asyncio.sleep(0.01)
