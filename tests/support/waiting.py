"""Wait for a condition with a deadline: tests never sleep and hope."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(check: Callable[[], T], timeout: float = 30.0, interval: float = 0.05) -> T:
    """Call `check` until it returns something truthy; fail with its last value at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s; last value: {value!r}")
        time.sleep(interval)
