"""How long any component waits for its database: to connect, and for one statement.

Defaults hold for every process (CLI, worker, API, operator, pipeline); the environment
variables `TABLEQUEUE_DB_CONNECT_TIMEOUT` and `TABLEQUEUE_DB_STATEMENT_TIMEOUT` (seconds, `0`
for no limit) change them, and a URL's own parameters (e.g. PostgreSQL's `?connect_timeout=`)
win over both. Each dialect turns them into its driver's connect arguments.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import InvalidInput

CONNECT_ENV = "TABLEQUEUE_DB_CONNECT_TIMEOUT"
STATEMENT_ENV = "TABLEQUEUE_DB_STATEMENT_TIMEOUT"


@dataclass(frozen=True)
class DatabaseTimeouts:
    connect_seconds: float | None = 10.0
    """A database that accepts connections but never answers fails a connect after this."""
    statement_seconds: float | None = 300.0
    """The database cancels a statement running longer (a lease or a purge batch takes
    milliseconds; a migration's index build on a large table can take minutes)."""

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> DatabaseTimeouts:
        environ = os.environ if environ is None else environ
        return cls(
            connect_seconds=_seconds(environ, CONNECT_ENV, cls.connect_seconds),
            statement_seconds=_seconds(environ, STATEMENT_ENV, cls.statement_seconds),
        )


def _seconds(environ: Mapping[str, str], name: str, default: float | None) -> float | None:
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise InvalidInput(f"{name}: expected a number of seconds (0 for no limit), got {text!r}")
    return value or None
