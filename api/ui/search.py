"""The queue page's search fields: the text of the last error and the time bounds, kept in the
URL by the names the HTTP API uses, so that a link reproduces a search."""

from __future__ import annotations

from typing import Any

from tablequeue.durations import point_in_time

FIELDS = {
    "errorContains": "error_contains",
    "createdAfter": "created_after",
    "createdBefore": "created_before",
    "updatedAfter": "updated_after",
    "updatedBefore": "updated_before",
}
"""URL key -> keyword of `Queue.messages`."""


def given(**values: str) -> dict[str, str]:
    """The fields the page was given (URL key -> text), without the empty ones."""
    return {key: value.strip() for key, value in values.items() if value.strip()}


def arguments(fields: dict[str, str]) -> dict[str, Any]:
    """Keywords for `Queue.messages`; InvalidInput names the field whose time does not parse."""
    return {
        FIELDS[key]: value if key == "errorContains" else point_in_time(value, key)
        for key, value in fields.items()
    }
