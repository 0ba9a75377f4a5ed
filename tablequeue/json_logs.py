"""JSON log lines on stderr, one object per line: the set-up the worker and the API share.

Needs python-json-logger, which the `worker` and `api` extras bring (imported when called, so the
core imports without it)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence


def setup(
    level: str = "INFO",
    static_fields: Mapping[str, object] | None = None,
    filters: Sequence[logging.Filter] = (),
) -> None:
    """Every logger's records (the root's one handler) as JSON: time, level, logger, message,
    the record's extra fields and `static_fields`."""
    from pythonjsonlogger.core import RESERVED_ATTRS
    from pythonjsonlogger.json import JsonFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter(
            "{asctime}{levelname}{name}{message}",
            style="{",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            static_fields=dict(static_fields) if static_fields else None,
            # uvicorn's copy of the message with terminal colours.
            reserved_attrs=[*RESERVED_ATTRS, "color_message"],
        )
    )
    for log_filter in filters:
        handler.addFilter(log_filter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
