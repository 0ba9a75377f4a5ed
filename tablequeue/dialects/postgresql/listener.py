"""PostgreSQL LISTEN: wake the lease loop the moment a message is enqueued or released."""

from __future__ import annotations

import asyncio
import logging

import psycopg
import sqlalchemy as sa
from psycopg import sql

from ...backoff import Backoff

log = logging.getLogger("tablequeue.dialects")


async def listen(url: sa.URL, channel: str, wake: asyncio.Event) -> None:
    """Set `wake` on every notification; reconnect with back-off. Runs until cancelled."""
    conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
    backoff = Backoff(0.5, 30.0, jitter=False)
    while True:
        try:
            async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
                await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                backoff.reset()
                wake.set()  # whatever arrived while we were not listening
                async for _ in conn.notifies():
                    wake.set()
        except (psycopg.Error, OSError) as error:
            log.warning("listen connection lost", extra={"error": str(error).splitlines()[0]})
            await asyncio.sleep(backoff.next())
