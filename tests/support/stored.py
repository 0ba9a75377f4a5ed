"""The id of what an enqueue stored, for tests that go on to look the message up."""

from __future__ import annotations

from tablequeue.models import Enqueued


def stored_id(enqueued: Enqueued) -> int:
    """The row id of an enqueue that stored its message (a discarded one fails the test)."""
    assert enqueued.id is not None, enqueued
    return enqueued.id
