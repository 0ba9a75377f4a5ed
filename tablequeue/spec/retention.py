"""How long each kind of finished row is kept: the Queue spec's `keep*For` fields and their
defaults, with why each default is what it is."""

from __future__ import annotations

from datetime import timedelta

from pydantic.alias_generators import to_camel

from .. import names

KEEP_FIELDS = (
    "keep_processed_for",
    "keep_results_for",
    "keep_error_for",
    "keep_abandoned_for",
    "keep_cancelled_for",
    "keep_expired_for",
)
"""The retention durations: unset means each one's default, so a dump leaves them unset."""
KEEP_KEYS = tuple(to_camel(field) for field in KEEP_FIELDS)


DEFAULT_KEEP_RESULTS = timedelta(hours=1)
"""An hour: a client polling `GET /jobs/ID` finds the outcome long after the row is gone, and
the results table holds an hour of finished messages (about 250 MiB at 500 msg/s, where a day
grew it by about 6 GiB)."""
DEFAULT_KEEP_FINAL = {
    names.ERROR: timedelta(days=30),
    names.ABANDONED: timedelta(days=30),
    names.CANCELLED: timedelta(days=7),
    names.EXPIRED: timedelta(days=7),
}
"""Failures stay a month for a person to look at and retry; what people or clocks ended stays
a week. Processed rows follow `keep_processed` (default: deleted at once)."""


def is_keep(key: object) -> bool:
    """A retention field, by its Python or YAML name."""
    return key in KEEP_FIELDS or key in KEEP_KEYS
