"""The pipeline's enqueue counts every outcome an enqueue can have (a new one would otherwise
fail a partition with a KeyError)."""

from __future__ import annotations

from typing import get_args

from tablequeue.models import EnqueueOutcome
from tablequeue.pipeline.enqueue import COUNTERS, OUTCOMES


def test_every_enqueue_outcome_adds_to_a_counter() -> None:
    assert set(OUTCOMES) == set(get_args(EnqueueOutcome))
    assert set(OUTCOMES.values()) <= set(COUNTERS)
