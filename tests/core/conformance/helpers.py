"""Small helpers of the conformance suite."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tablequeue import Queue

MakeQueue = Callable[..., Queue]
ROOT = Path(__file__).resolve().parents[3]


def statuses(queue: Queue) -> dict[int, str]:
    return {m.id: m.status for m in queue.messages(limit=10_000)}


def lease_all(queue: Queue, owner: str = "w1", batch: int = 100) -> list[int]:
    return [m.id for m in queue.lease(owner, batch).messages]
