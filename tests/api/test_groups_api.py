"""Group keys over real HTTP, on every engine: enqueued (one and a batch, given or found at the
spec's keyPath), shown in the message JSON and on the admin UI's message page, and refused with
the field or body path named when malformed."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tablequeue import Database
from tablequeue.spec import QueueResource
from tests.support.api_server import api_client


@pytest.fixture
def client(database: Database) -> Iterator[httpx.Client]:
    database.apply(QueueResource.from_name("orders", groups={"keyPath": "CustomerId"}))
    with api_client(database) as client:
        yield client


def test_enqueue_and_show_a_group_key(client: httpx.Client) -> None:
    one = client.post("/queues/orders", json={"message": {"n": 1}, "groupKey": "customer-5"})
    assert one.status_code == 201, one.text
    [given] = one.json()["results"]
    batch = client.post(
        "/queues/orders", json=[{"message": {"n": 2, "CustomerId": 6}}, {"message": {"n": 3}}]
    )
    assert batch.status_code == 201, batch.text
    found, keyless = batch.json()["results"]
    keys = [
        client.get(f"/queues/orders/messages/{m['id']}").json()["groupKey"]
        for m in (given, found, keyless)
    ]
    assert keys == ["customer-5", "6", None]
    page = client.get(f"/ui/queues/orders/messages/{given['id']}")
    assert page.status_code == 200
    assert 'id="group-key">customer-5<' in page.text


def test_a_malformed_group_key_is_refused_naming_the_field(client: httpx.Client) -> None:
    given = client.post("/queues/orders", json={"message": {"n": 1}, "groupKey": "two\nlines"})
    assert given.status_code == 422 and "groupKey" in given.text
    found = client.post("/queues/orders", json={"message": {"CustomerId": "x" * 201}})
    assert found.status_code in (400, 422) and "body path CustomerId" in found.text
    assert client.get("/queues/orders/messages").json()["items"] == []
