"""Audit entries made older, for tests of the trail's retention (no purge takes entries younger
than a day)."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from tablequeue import Database


def backdate(database: Database, by: timedelta) -> None:
    """Every audit entry made `by` earlier."""
    table = database.audit
    with database.transaction() as connection:
        for entry_id, at in connection.execute(sa.select(table.c.id, table.c.at)).all():
            moved = sa.update(table).where(table.c.id == entry_id).values(at=at - by)
            connection.execute(moved)
