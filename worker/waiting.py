"""Waiting on asyncio events: the first of several, or a sleep that an event cuts short."""

from __future__ import annotations

import asyncio
import contextlib


async def wait_any(*events: asyncio.Event) -> None:
    """Return as soon as one of the events is set."""
    waiters = [asyncio.create_task(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


async def sleep_unless(seconds: float, *events: asyncio.Event) -> None:
    """Sleep `seconds`, or less if one of the events is set meanwhile."""
    if not events:
        await asyncio.sleep(seconds)
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(wait_any(*events), timeout=seconds)
