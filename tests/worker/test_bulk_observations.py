"""Observations added in bulk (the worker's histograms, the rollup's minute counts) come out
exactly as one observation at a time would have."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from tablequeue.metrics import LATENCY_BUCKETS
from tablequeue.rollup.write import MinuteCounts
from tablequeue.worker.metrics import Observations

# On and around every bound, zero, negative (a clock step), and far past the largest bound.
VALUES = [0.0, -0.5, 7200.0, 1e-9] + [
    bound * factor for bound in LATENCY_BUCKETS for factor in (0.5, 1.0, 1.000001)
]


def _histogram(registry: CollectorRegistry) -> Histogram:
    family = Histogram("x_seconds", "x", ["queue"], buckets=LATENCY_BUCKETS, registry=registry)
    return family.labels(queue="q")


def _exposition(registry: CollectorRegistry) -> list[str]:
    """The scraped lines, without the creation time."""
    return [
        line
        for line in generate_latest(registry).decode().splitlines()
        if "_created" not in line and not line.startswith("x_seconds_sum")
    ]


def _sum(registry: CollectorRegistry) -> float:
    value = registry.get_sample_value("x_seconds_sum", {"queue": "q"})
    assert value is not None
    return value


def test_histogram_in_bulk_equals_one_at_a_time() -> None:
    one_by_one, bulk = CollectorRegistry(), CollectorRegistry()
    direct = _histogram(one_by_one)
    observations = Observations(_histogram(bulk))
    for value in VALUES:
        direct.observe(value)
        observations.observe(value)
    assert _exposition(bulk) != _exposition(one_by_one)  # nothing is added before the flush
    observations.flush()
    observations.flush()  # nothing pending: adds nothing
    assert _exposition(bulk) == _exposition(one_by_one)
    assert abs(_sum(bulk) - _sum(one_by_one)) <= 1e-9 * abs(_sum(one_by_one))
    observations.observe(0.2)
    direct.observe(0.2)
    observations.flush()
    assert _exposition(bulk) == _exposition(one_by_one)


def test_rollup_minute_in_bulk_equals_one_at_a_time() -> None:
    one_by_one, bulk = MinuteCounts(), MinuteCounts()
    for value in VALUES:
        one_by_one.observe(value)
    bulk.observe_many(VALUES)
    bulk.observe_many([])
    assert bulk.buckets == one_by_one.buckets
    assert bulk.latency_max == one_by_one.latency_max
    assert abs(bulk.latency_sum - one_by_one.latency_sum) <= 1e-9 * one_by_one.latency_sum
