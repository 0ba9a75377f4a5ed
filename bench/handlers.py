"""Handlers that the benchmarks run inside `tablequeue worker`."""

from __future__ import annotations

import os
import time

from tablequeue.models import Message
from tablequeue.worker import batch_handler


async def record_start(message: Message) -> None:
    """Append `id start-time` to the file named by $BENCH_STARTS (latency benchmark)."""
    started = time.time()
    with open(os.environ["BENCH_STARTS"], "a") as out:
        out.write(f"{message.id} {started:.6f}\n")


@batch_handler
async def noop_batch(messages: list[Message]) -> list[None]:
    """Do nothing, successfully, for a whole batch in one call (worker drain, batch handler)."""
    return [None] * len(messages)
