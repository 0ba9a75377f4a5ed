"""The app readiness gate: an HTTP handler's worker leases only while its app answers.

The app runs in another container of the pod and may not listen yet when the worker starts, or
stop listening for a while (restarted, crashed). A request that could not reach it is no attempt:
the worker gives the message back (Pending again, attempt not counted), closes the gate and
gives back the leased messages that have not started either. While the gate is closed the worker
leases nothing and `/readyz` answers 503 with the reason; a GET on the app's readiness path
(`spec.workers.appReadinessPath`, default `/`) every APP_POLL seconds opens it again once the
app answers with any HTTP status but 502, 503 and 504 (a 404, or the 501 of a server without
GET handlers, is an app that listens); a line every STILL_WAITING_EVERY seconds says what the
GET got meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from .handlers import HttpHandler
from .waiting import sleep_unless, wait_any

log = logging.getLogger("tablequeue.worker")
APP_POLL = 0.2
"""Seconds between two readiness GETs while the app does not answer."""
STILL_WAITING_EVERY = 10.0
"""Seconds between two log lines saying what the readiness GET got while the app is not ready."""


class AppGate:
    """Open while the app answers. `check_url` None (Python handlers, or the check turned off):
    always open."""

    def __init__(
        self,
        handler: HttpHandler | None,
        path: str | None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.handler = handler
        self.on_close = on_close
        """Called each time the gate closes (wakes the lease loop)."""
        self.check_url = handler.app_url(path) if handler is not None and path else None
        self._open = asyncio.Event()
        self._closed = asyncio.Event()
        self.reason: str | None = None
        """Why the gate is closed; None while it is open."""
        if self.check_url is None:
            self._open.set()
        else:
            self._close(f"waiting for the app at {self.check_url}")

    @property
    def is_open(self) -> bool:
        return self._open.is_set()

    def app_unreachable(self, error: str) -> None:
        """A request could not reach the app: close the gate until it answers again."""
        if not self.is_open or self.check_url is None:
            return
        log.warning(
            "the app stopped answering: leasing paused, unstarted messages given back",
            extra={"error": error[:300], "url": self.check_url},
        )
        self._close(f"waiting for the app at {self.check_url} (it stopped answering)")

    async def wait_open(self, stopping: asyncio.Event) -> None:
        """Return once the gate is open, or the worker stops."""
        if not self.is_open:
            await wait_any(self._open, stopping)

    async def watch(self, stopping: asyncio.Event) -> None:
        """While the worker runs: each time the gate closes, poll the app until it answers."""
        if self.check_url is None or self.handler is None:
            return
        while not stopping.is_set():
            if self.is_open:
                await wait_any(self._closed, stopping)
                continue
            started = said = time.monotonic()
            log.info("waiting for the app before leasing", extra={"url": self.check_url})
            while not stopping.is_set():
                got = await self.handler.not_ready(self.check_url)
                if got is None:
                    break
                if time.monotonic() - said >= STILL_WAITING_EVERY:
                    said = time.monotonic()
                    log.info(
                        f"still waiting for the app at {self.check_url} after "
                        f"{round(said - started)} s: {got}",
                        extra={"url": self.check_url, "got": got[:300]},
                    )
                await sleep_unless(APP_POLL, stopping)
            if stopping.is_set():
                return
            waited = round(time.monotonic() - started, 3)
            log.info(
                f"the app answered after {waited:g}s: leasing",
                extra={"url": self.check_url, "waited_seconds": waited},
            )
            self.reason = None
            self._closed.clear()
            self._open.set()

    def _close(self, reason: str) -> None:
        self.reason = reason
        self._open.clear()
        self._closed.set()
        if self.on_close is not None:
            self.on_close()
