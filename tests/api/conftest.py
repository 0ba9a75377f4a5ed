"""Fixtures of the API tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tablequeue import Queue
from tests.support.engines import db_url_each_engine_once  # noqa: F401 (this folder's db_url)
from tests.support.fuzzing import seed_queues


@pytest.fixture
def seeded(make_queue: Callable[..., Queue]) -> dict[str, list[Any]]:
    """Two queues with messages in most statuses, and their names, ids and tracking ids."""
    return seed_queues(make_queue)
