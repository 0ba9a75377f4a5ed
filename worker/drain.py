"""`GET /drained`: answers once the worker was asked to stop and is done with its handlers.

Meant as the app container's `preStop` hook (`httpGet` on the worker's port): the kubelet sends
the app its SIGTERM only after the hook returns, so the app keeps serving the requests of the
handlers that are still running while the worker drains. The kubelet starts the hook and sends
the worker its SIGTERM at the same moment, in no set order: a request that comes first waits for
the SIGTERM, then for the drain. It never waits longer than the grace period + DRAIN_MARGIN
seconds (then it answers 200 all the same, saying so), and the worker's process exits only once
every such request has its answer written (`answered`).
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


class DrainRoute:
    """The `/drained` route of one worker: `drained` is set when its shutdown is done;
    `grace_period()` is the worker's grace period in seconds."""

    def __init__(self, drained: asyncio.Event, grace_period: Callable[[], float]) -> None:
        self.drained = drained
        self.grace_period = grace_period
        self._answering: set[asyncio.Task[object]] = set()

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
            return response
        finally:
            if task is not None:
                self._answering.discard(task)

    async def answered(self, timeout: float = 5.0) -> None:
        """Wait (at most `timeout` seconds) until every pending `/drained` request has its
        answer written: call once `drained` is set, before the server stops."""
        if not self._answering:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(_all_out(self._answering), timeout)


async def _all_out(answering: set[asyncio.Task[object]]) -> None:
    while answering:
        await asyncio.sleep(0.01)
