"""A warning a background task logs at most once every so often: a task that fails round after
round (a missing grant, a database away) says so now and then, never by turning the worker
unready."""

from __future__ import annotations

import logging
import time

log = logging.getLogger("tablequeue.worker")
WARN_EVERY = 600.0
"""Seconds between two log lines of one warning."""


class NowAndThen:
    def __init__(self, message: str, every: float = WARN_EVERY) -> None:
        self.message, self.every = message, every
        self._warned_at: float | None = None

    def warn(self, error: BaseException) -> None:
        now = time.monotonic()
        if self._warned_at is None or now - self._warned_at >= self.every:
            self._warned_at = now
            log.warning(self.message, extra={"error": str(error).splitlines()[0][:300]})
