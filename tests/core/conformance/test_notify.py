"""Waking workers: engines that notify wake a listener on enqueue and release; the others say
they cannot (their workers poll).

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

import asyncio

import pytest

from tablequeue import Database
from tablequeue.dialects import Capabilities

from .helpers import MakeQueue


async def _woken(wake: asyncio.Event) -> None:
    await asyncio.wait_for(wake.wait(), timeout=30)
    wake.clear()


def test_enqueue_and_release_wake_a_listener_where_the_engine_notifies(
    database: Database, make_queue: MakeQueue, capabilities: Capabilities
) -> None:
    queue = make_queue()
    listen = database.dialect.listen

    async def scenario() -> None:
        wake = asyncio.Event()
        if not capabilities.notifies:
            with pytest.raises(NotImplementedError, match="workers poll"):
                await listen(database.url, queue.table.name, wake)
            return
        listener = asyncio.create_task(listen(database.url, queue.table.name, wake))
        try:
            await _woken(wake)  # set once listening: whatever arrived before
            await asyncio.to_thread(queue.enqueue, {"n": 1})
            await _woken(wake)
            [message] = (await asyncio.to_thread(queue.lease, "w1", 1)).messages
            assert not wake.is_set()  # a lease wakes nobody
            await asyncio.to_thread(queue.release, "w1", [message.id])
            await _woken(wake)
        finally:
            listener.cancel()

    asyncio.run(scenario())
