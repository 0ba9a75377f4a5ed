"""The common mistakes in an enqueue or publish body get a 422 that says what the body should be
(issue 26), not the names of pydantic's validators."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tablequeue import connect
from tablequeue.spec import QueueResource
from tests.support.api_server import api_client


@pytest.fixture
def client(sqlite_url: str) -> Iterator[httpx.Client]:
    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("orders"))
        with api_client(database) as client:
            yield client


ENVELOPE = 'expected {"message": ...}'


@pytest.mark.parametrize(
    ("path", "body", "expected"),
    [
        ("/queues/orders", {"a": 1, "b": 2}, f"{ENVELOPE}; got an object with keys a, b"),
        ("/queues/orders", {}, f"{ENVELOPE}; got an empty object"),
        ("/queues/orders", "hello", f"{ENVELOPE} (or a list of them); got a string"),
        ("/queues/orders", 5, f"{ENVELOPE} (or a list of them); got a number"),
        ("/queues/orders", [{"message": 1}, {"x": 1}], f"1: {ENVELOPE}; got an object with keys x"),
        ("/queues/orders", [{"message": 1}, 3], f"1: {ENVELOPE}; got a number"),
        (
            "/queues/orders",
            {"message": 1, "prority": 3},
            "unknown field 'prority' (did you mean 'priority'?)",
        ),
        ("/queues/orders", {"mesage": 1}, "unknown field 'mesage' (did you mean 'message'?)"),
        (
            "/queues/orders",
            {"message": 1, "zzz": 1},
            "unknown field 'zzz' (accepted: after, at, correlationId, expiresAfter, expiresAt, "
            "groupKey, headers, label, message, messageId, priority, status, trackingId)",
        ),
        (
            "/queues/orders",
            [{"message": 1}, {"message": 2, "mesageId": "a"}],
            "1: unknown field 'mesageId' (did you mean 'messageId'?)",
        ),
        (
            "/queues/orders/status",
            {"status": "Error", "dryrun": True},
            "unknown field 'dryrun' (did you mean 'dryRun'?)",
        ),
        (
            "/topics/shop.orders/messages",
            {"mesage": 1},
            "unknown field 'mesage' (did you mean 'message'?)",
        ),
        ("/topics/shop.orders/messages", {"a": 1}, f"{ENVELOPE}; got an object with keys a"),
        ("/topics/shop.orders/messages", [1], f"{ENVELOPE}; got a list"),
    ],
    ids=[
        "no envelope",
        "empty object",
        "a string",
        "a number",
        "an item without envelope",
        "an item not an object",
        "a misspelled option",
        "a misspelled envelope",
        "an unknown option like no other",
        "a misspelled option of an item",
        "a misspelled field of set-status",
        "publish a misspelled envelope",
        "publish without envelope",
        "publish a list",
    ],
)
def test_a_body_mistake_is_one_readable_line(
    client: httpx.Client, path: str, body: Any, expected: str
) -> None:
    response = client.post(path, json=body)
    assert response.status_code == 422
    assert response.json() == {"error": f"invalid request: {expected}", "detail": [expected]}


def test_a_body_that_is_not_json_or_missing_says_so(client: httpx.Client) -> None:
    broken = client.post(
        "/queues/orders", content=b"{bad", headers={"content-type": "application/json"}
    )
    assert broken.status_code == 422
    assert broken.json()["error"] == (
        "invalid request: the body is not JSON: Expecting property name enclosed in double "
        "quotes (at character 1)"
    )
    empty = client.post("/queues/orders")
    assert empty.status_code == 422
    assert empty.json()["error"] == "invalid request: a JSON body is required"


def test_other_requests_keep_naming_the_parameter(client: httpx.Client) -> None:
    response = client.get("/queues/orders/messages", params={"limit": "x"})
    assert response.status_code == 422
    assert response.json()["detail"] == [
        "query.limit: Input should be a valid integer, unable to parse string as an integer"
    ]
