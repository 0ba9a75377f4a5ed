"""Searching a queue's list over real HTTP by error text and time ranges: the parameters reach
the core (combined with status, and paged by the cursor), and a bad value is a 400 that names
its parameter. The filters themselves hold on every engine (tests/core/conformance/
test_search.py); here one engine is enough."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tablequeue import Failure, Queue, connect
from tablequeue.spec import QueueResource
from tests.support.api_server import api_client


@pytest.fixture
def orders(tmp_path: Path) -> Iterator[tuple[Queue, httpx.Client]]:
    with connect(f"sqlite:///{tmp_path}/api.db") as database:
        database.apply(QueueResource.from_name("orders"))
        queue = database.queue("orders")
        with api_client(database) as client:
            yield queue, client


def test_error_text_and_times_filter_the_list(orders: tuple[Queue, httpx.Client]) -> None:
    queue, client = orders
    made = [queue.enqueue({"n": n}).id for n in range(3)]
    leased = queue.lease("w1", 3).messages
    queue.fail(
        "w1",
        [Failure(m, f"TimeoutError: try {m.id}_100%", permanent=True) for m in leased[:2]],
    )
    queue.fail("w1", [Failure(leased[2], "ValueError: bad sku", permanent=True)])

    def listed(**params: str) -> list[int]:
        answer = client.get("/queues/orders/messages", params=params)
        assert answer.status_code == 200, answer.text
        return [m["id"] for m in answer.json()["items"]]

    assert listed(errorContains="timeouterror") == made[:2]
    assert listed(errorContains="_100%") == made[:2]
    assert listed(errorContains="bad sku", status="Error") == made[2:]
    assert listed(errorContains="'; DROP TABLE orders; --") == []
    hour_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    assert listed(createdAfter=hour_ago, updatedAfter="-1h") == made
    assert listed(createdBefore=hour_ago) == []
    assert listed(createdAfter="2020-01-01T00:00:00+02:00", updatedBefore="2999-01-01T00:00Z") == (
        made
    )
    first = client.get(
        "/queues/orders/messages", params={"errorContains": "timeout", "limit": 1}
    ).json()
    assert [m["id"] for m in first["items"]] == made[:1]
    rest = client.get(
        "/queues/orders/messages",
        params={"errorContains": "timeout", "cursor": first["nextCursor"]},
    ).json()
    assert [m["id"] for m in rest["items"]] == made[1:2] and rest["nextCursor"] is None


@pytest.mark.parametrize(
    ("parameter", "value", "problem"),
    [
        ("createdAfter", "yesterday", "invalid time"),
        ("createdBefore", "2026-01-31T12:00", "needs an offset"),
        ("updatedAfter", "-7x", "invalid time"),
        ("updatedBefore", "2026-13-01T00:00Z", "invalid time"),
    ],
)
def test_a_bad_time_is_400_naming_the_parameter(
    orders: tuple[Queue, httpx.Client], parameter: str, value: str, problem: str
) -> None:
    _, client = orders
    refused = client.get("/queues/orders/messages", params={parameter: value})
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error.startswith(f"{parameter}: ") and problem in error


def test_error_text_out_of_bounds_is_refused_naming_it(orders: tuple[Queue, httpx.Client]) -> None:
    _, client = orders
    for value in ("", "x" * 201):
        refused = client.get("/queues/orders/messages", params={"errorContains": value})
        assert refused.status_code == 422, refused.text
        assert "errorContains" in refused.text
