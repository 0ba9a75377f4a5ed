"""Exponential back-off, capped, with optional full jitter: the one retry pacing of every
component that waits for a database or an API server to come back (worker, listener, operator).
"""

from __future__ import annotations

import random


class Backoff:
    """`next()` gives the wait before the next attempt, growing from `first` to `cap`;
    `reset()` after a success. With `jitter`, a wait is drawn between `first` and the ceiling
    so that many processes that lost one database do not come back in step."""

    def __init__(self, first: float, cap: float, *, jitter: bool = True) -> None:
        if not 0 < first <= cap:
            raise ValueError(f"back-off needs 0 < first <= cap, got first={first}, cap={cap}")
        self.first, self.cap, self.jitter = first, cap, jitter
        self.attempt = 0

    def delay(self, attempt: int) -> float:
        """The wait before retry number `attempt` (0 is the first retry): `first * 2**attempt`
        without jitter; with jitter, drawn between `first` and twice that, capped either way."""
        exponent = min(attempt, 64) + (1 if self.jitter else 0)
        ceiling = min(self.cap, self.first * 2.0**exponent)
        return random.uniform(self.first, ceiling) if self.jitter else ceiling

    def next(self) -> float:
        wait = self.delay(self.attempt)
        self.attempt += 1
        return wait

    def reset(self) -> None:
        self.attempt = 0
