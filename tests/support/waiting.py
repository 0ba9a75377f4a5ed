"""Wait for a condition with a deadline: tests never sleep and hope."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, TypeVar

T = TypeVar("T")


def wait_until(
    check: Callable[[], T | Literal[False] | None], timeout: float = 30.0, interval: float = 0.05
) -> T:
    """Call `check` until it returns something truthy; fail with its last value at the deadline.
    (Typed as what it returns when truthy: `x and y` or `y if x else None` returns `y`.)"""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s; last value: {value!r}")
        time.sleep(interval)
