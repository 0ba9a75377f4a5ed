"""An application's own database access, as a user of tablequeue has it: its own SQLAlchemy
engine (no tablequeue settings: default isolation, collation, transaction handling) and its
own table, for the outbox tests (the message and the application's row commit together)."""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa

_ODBC_SERVER_PORT = re.compile(r"Server=([^;,]+),(\d+)")

METADATA = sa.MetaData()
ORDERS = sa.Table(
    "app_orders",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("total", sa.Integer, nullable=False),
)


def application_engine(url: sa.URL | str) -> sa.Engine:
    """A plain engine on `url` with the application's `app_orders` table created."""
    engine = sa.create_engine(url)

    @sa.event.listens_for(engine, "do_connect")
    def _odbc_port(_dialect: Any, _record: Any, cargs: list[Any], _params: Any) -> None:
        # SQLAlchemy writes SQL Server's `Server=host,port`; MariaDB's ODBC driver wants Port.
        if cargs and isinstance(cargs[0], str):
            cargs[0] = _ODBC_SERVER_PORT.sub(r"Server=\1;Port=\2", cargs[0])

    METADATA.create_all(engine)
    return engine


def order_ids(engine: sa.Engine) -> list[int]:
    with engine.connect() as connection:
        return list(connection.execute(sa.select(ORDERS.c.id).order_by(ORDERS.c.id)).scalars())
