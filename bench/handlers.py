"""Handlers that the benchmarks run inside `tablequeue worker`."""

from __future__ import annotations

import os
import time

from tablequeue.models import Message


async def record_start(message: Message) -> None:
    """Append `id start-time` to the file named by $BENCH_STARTS (latency benchmark)."""
    started = time.time()
    with open(os.environ["BENCH_STARTS"], "a") as out:
        out.write(f"{message.id} {started:.6f}\n")
