"""Each namespace's own threads for its Queues' handlers.

The handlers' work waits on databases and on the API server. Run on kopf's one pool of threads,
a tenant's Queues whose databases never answer held every thread, and every other tenant's
Queues waited for them (24 silent databases: 116 s before a healthy Queue in another namespace
was Ready). Here each namespace gets a few threads of its own and kopf's event loop only awaits
them: a tenant's slow databases delay that tenant's Queues, never another's.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
LANES_PER_NAMESPACE = 4
"""Threads per namespace: its Queues' handlers run at most this many at a time."""


class NamespaceLanes:
    def __init__(self, per_namespace: int = LANES_PER_NAMESPACE) -> None:
        self._per_namespace = per_namespace
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._lock = threading.Lock()

    async def run(self, namespace: str, work: Callable[[], T]) -> T:
        """`work()` on the namespace's threads, in this context (kopf's event posting and
        logging read context variables). As kopf does for its own threads, a cancellation (the
        Queue deleted while its timer runs) waits for the thread to end: no thread is left
        writing to a handler's patch after kopf has moved on."""
        context = contextvars.copy_context()
        future = asyncio.wrap_future(self._pool(namespace).submit(context.run, work))
        cancellation: asyncio.CancelledError | None = None
        while not future.done():
            try:
                await asyncio.shield(future)
            except asyncio.CancelledError as cancelled:
                cancellation = cancelled
        if cancellation is not None:
            raise cancellation
        return future.result()

    def _pool(self, namespace: str) -> ThreadPoolExecutor:
        with self._lock:
            pool = self._pools.get(namespace)
            if pool is None:
                pool = self._pools[namespace] = ThreadPoolExecutor(
                    self._per_namespace, thread_name_prefix=f"namespace-{namespace}"
                )
            return pool

    def close(self) -> None:
        with self._lock:
            for pool in self._pools.values():
                pool.shutdown(wait=False, cancel_futures=True)
            self._pools.clear()
