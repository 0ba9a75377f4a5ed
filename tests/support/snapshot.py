"""Table snapshots: proof that a rejected request changed nothing."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from tablequeue import Database


def snapshot(database: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, to prove a rejected request changed nothing."""
    metadata = sa.MetaData()
    metadata.reflect(database.engine)
    with database.engine.connect() as connection:
        return {
            name: sorted(map(tuple, connection.execute(sa.select(table))), key=repr)
            for name, table in metadata.tables.items()
        }
