"""The caller's correlation id and label over real HTTP, on every engine: enqueued (one and a
batch), shown in the message JSON beside the lease batch's id, filtered on in a queue's list,
found by the find box's route, and refused with the field named when malformed."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from tablequeue import Database, Queue
from tests.support.api_server import api_client

MakeQueue = Callable[..., Queue]


@pytest.fixture
def client(database: Database, make_queue: MakeQueue) -> Iterator[httpx.Client]:
    make_queue("orders")
    make_queue("mails")
    with api_client(database) as client:
        yield client


def test_enqueue_show_filter_and_find(client: httpx.Client) -> None:
    one = client.post(
        "/queues/orders",
        json={"message": {"n": 1}, "correlationId": "checkout-9", "label": "Order A-9"},
    )
    assert one.status_code == 201
    [created] = one.json()["results"]
    batch = client.post(
        "/queues/mails",
        json=[
            {"message": {"n": 2}, "correlationId": "checkout-9", "label": "Receipt A-9"},
            {"message": {"n": 3}, "correlationId": "checkout-10"},
        ],
    )
    assert batch.status_code == 201
    shown = client.get(f"/queues/orders/messages/{created['id']}").json()
    assert shown["correlationId"] == "checkout-9" and shown["label"] == "Order A-9"
    assert "leaseBatchId" in shown and shown["leaseBatchId"] is None  # never leased yet
    page = client.get("/queues/mails/messages", params={"correlationId": "checkout-9"}).json()
    assert [m["label"] for m in page["items"]] == ["Receipt A-9"]
    found = client.get("/messages", params={"key": "checkout-9"}).json()["items"]
    assert sorted((f["queue"], f["label"]) for f in found) == [
        ("mails", "Receipt A-9"),
        ("orders", "Order A-9"),
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [("correlationId", "x" * 129), ("correlationId", ""), ("label", "two\nlines")],
)
def test_a_malformed_value_is_422_naming_the_field(
    client: httpx.Client, field: str, value: str
) -> None:
    refused = client.post("/queues/orders", json={"message": {"n": 1}, field: value})
    assert refused.status_code == 422
    assert field in refused.text
    assert client.get("/queues/orders/messages").json()["items"] == []
