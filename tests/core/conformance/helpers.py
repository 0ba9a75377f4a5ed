"""Small helpers of the conformance suite."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from tablequeue import Database, Queue, connect

MakeQueue = Callable[..., Queue]
ROOT = Path(__file__).resolve().parents[3]


def statuses(queue: Queue) -> dict[int, str]:
    return {m.id: m.status for m in queue.messages(limit=10_000)}


def lease_all(queue: Queue, owner: str = "w1", batch: int = 100) -> list[int]:
    return [m.id for m in queue.lease(owner, batch).messages]


def lease_at_once_behind_the_registry_row(
    database: Database, db_url: str, queue_name: str, connections: int = 4, batch: int = 10
) -> list[int]:
    """The ids `connections` separate connections lease, `batch` each, all started while the
    queue's registry row is held locked: they queue up behind it, and each must see the leases
    committed while it waited (a limit's race). Fails on any connection's error."""
    handles = [connect(db_url) for _ in range(connections)]
    taken: list[int] = []
    failed: list[BaseException] = []
    started = threading.Barrier(len(handles) + 1)

    def lease(handle: Database, owner: str) -> None:
        try:
            started.wait()
            taken.extend(m.id or 0 for m in handle.queue(queue_name).lease(owner, batch).messages)
        except BaseException as error:
            failed.append(error)

    threads = [
        threading.Thread(target=lease, args=(handle, f"w{i}")) for i, handle in enumerate(handles)
    ]
    try:
        with database.transaction() as connection:
            registry = database.registry
            connection.execute(
                registry.update()
                .where(registry.c.name == queue_name)
                .values(updated_at=registry.c.updated_at)
            )
            for thread in threads:
                thread.start()
            started.wait()
        for thread in threads:
            thread.join()
    finally:
        for handle in handles:
            handle.close()
    assert failed == []
    return taken
