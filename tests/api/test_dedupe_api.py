"""Dedupe modes over real HTTP, on every engine: the queue's `spec.dedupe`, a request's own
(`?dedupe=`, `?dedupeWindow=`), the `kept` outcome with the row left as it was, and bad values
refused naming the parameter."""

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
    make_queue("mails", dedupe={"mode": "keep"})
    with api_client(database) as client:
        yield client


def test_kept_is_reported_with_the_row_left_as_it_was(client: httpx.Client) -> None:
    first = client.post("/queues/orders", json={"message": {"v": 1}, "messageId": "a"})
    assert first.status_code == 201
    [inserted] = first.json()["results"]
    kept = client.post(
        "/queues/orders",
        params={"dedupe": "keep"},
        json=[{"message": {"v": 2}, "messageId": "a"}, {"message": {"v": 3}, "messageId": "b"}],
    )
    assert kept.status_code == 201
    assert [r["outcome"] for r in kept.json()["results"]] == ["kept", "inserted"]
    [left, _] = kept.json()["results"]
    assert (left["id"], left["trackingId"], left["status"], left["version"]) == (
        inserted["id"],
        inserted["trackingId"],
        "Pending",
        1,
    )
    windowed = client.post(
        "/queues/orders",
        params={"dedupe": "window", "dedupeWindow": "10m"},
        json={"message": {"v": 4}, "messageId": "a"},
    )
    assert windowed.json()["results"][0]["outcome"] == "kept"
    replaced = client.post("/queues/orders", json={"message": {"v": 5}, "messageId": "a"})
    assert replaced.json()["results"][0]["outcome"] == "updated"
    client.post("/queues/mails", json={"message": {"v": 1}, "messageId": "m"})
    by_queue = client.post("/queues/mails", json={"message": {"v": 2}, "messageId": "m"})
    assert by_queue.json()["results"][0]["outcome"] == "kept"
    shown = client.get("/queues/mails/messages", params={"messageId": "m"}).json()["items"]
    assert [m["message"] for m in shown] == [{"v": 1}]


def test_bad_dedupe_parameters_are_refused_naming_them(client: httpx.Client) -> None:
    body = {"message": {"v": 1}, "messageId": "a"}
    mode = client.post("/queues/orders", params={"dedupe": "sometimes"}, json=body)
    assert mode.status_code == 422 and "dedupe" in mode.text
    no_window = client.post("/queues/orders", params={"dedupe": "window"}, json=body)
    assert no_window.status_code == 400 and "dedupeWindow" in no_window.text
    bad_window = client.post(
        "/queues/orders", params={"dedupe": "window", "dedupeWindow": "soon"}, json=body
    )
    assert bad_window.status_code == 400 and "invalid duration" in bad_window.text
    assert client.get("/queues/orders/messages").json()["items"] == []
