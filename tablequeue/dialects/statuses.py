"""Built-in statuses in SQL text."""

from __future__ import annotations

import sqlalchemy as sa

from .. import names


def literal_status(status: str) -> sa.ColumnElement[str]:
    """A built-in status as SQL text, never a user value: partial indexes match it."""
    assert status in names.BUILT_IN
    return sa.literal_column(f"'{status}'", sa.String)
