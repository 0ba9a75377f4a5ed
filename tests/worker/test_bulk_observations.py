"""A settled batch's latencies added to the rollup's minute in one call come out exactly as one
observation at a time would have."""

from __future__ import annotations

from tablequeue.metrics import LATENCY_BUCKETS
from tablequeue.rollup.write import MinuteCounts

# On and around every bound, zero, negative (a clock step), and far past the largest bound.
VALUES = [0.0, -0.5, 7200.0, 1e-9] + [
    bound * factor for bound in LATENCY_BUCKETS for factor in (0.5, 1.0, 1.000001)
]


def test_rollup_minute_in_bulk_equals_one_at_a_time() -> None:
    one_by_one, bulk = MinuteCounts(), MinuteCounts()
    for value in VALUES:
        one_by_one.observe(value)
    bulk.observe_many(VALUES)
    bulk.observe_many([])
    assert bulk.buckets == one_by_one.buckets
    assert bulk.latency_max == one_by_one.latency_max
    assert abs(bulk.latency_sum - one_by_one.latency_sum) <= 1e-9 * one_by_one.latency_sum
