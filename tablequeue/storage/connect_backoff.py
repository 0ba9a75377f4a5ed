"""Backing off from a database that does not answer a connect (`connect(url,
connect_backoff_seconds=...)`): after a failed connect, every connect fails at once for a while,
then one tries again while the others still fail at once. For a process that serves many
callers from a few threads (the API): a database that never answers would otherwise hold one
thread per request for the whole connect timeout, and the other databases' requests wait."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from ..errors import DatabaseUnavailable


class ConnectBackoff:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._failure: DatabaseUnavailable | None = None
        self._failed_at = 0.0
        self._retrying = False

    @contextlib.contextmanager
    def attempt(self) -> Iterator[None]:
        """Around one connect: DatabaseUnavailable at once while backing off (or while another
        connect tries again); a DatabaseUnavailable from the connect starts a new back-off, a
        success ends it."""
        with self._lock:
            if self._failure is not None:
                waited = time.monotonic() - self._failed_at
                if waited < self.seconds or self._retrying:
                    raise DatabaseUnavailable(
                        f"{self._failure} ({waited:.0f} s ago; connects fail at once for "
                        f"{self.seconds:g} s, then one tries again)"
                    )
                self._retrying = True
        try:
            yield
        except DatabaseUnavailable as failure:
            with self._lock:
                self._failure, self._failed_at, self._retrying = failure, time.monotonic(), False
            raise
        except BaseException:
            with self._lock:
                self._retrying = False
            raise
        with self._lock:
            self._failure, self._retrying = None, False
