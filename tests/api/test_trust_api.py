"""Defects found from outside (issue 17): statuses ending in a newline, the one error shape for
every 4xx (auth and unknown routes too), auth before body checks, no database location in
errors an API client sees."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator

import httpx
import pytest

from tablequeue import Database, Queue
from tablequeue.api.auth import Auth
from tablequeue.metrics import worker_messages
from tests.support.api_server import api_client
from tests.support.snapshot import snapshot

MakeQueue = Callable[..., Queue]
ADMIN = {"Authorization": "Bearer admin-secret"}
READ = {"Authorization": "Bearer read-secret"}


@pytest.fixture
def client(database: Database, make_queue: MakeQueue) -> Iterator[httpx.Client]:
    make_queue("orders").enqueue({"n": 1})
    with api_client(database, Auth(admin_token="admin-secret", read_token="read-secret")) as c:
        yield c


def is_error_body(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "detail"}, body
    assert isinstance(body["error"], str) and body["error"]
    assert isinstance(body["detail"], list)


def test_statuses_ending_in_a_newline_are_refused_everywhere(
    client: httpx.Client, database: Database
) -> None:
    before = snapshot(database)
    bad = "Pending\n"
    refused = [
        client.post("/queues/orders", json={"message": {}, "status": bad}, headers=ADMIN),
        client.get("/queues/orders/messages", params={"status": bad}, headers=ADMIN),
        client.patch("/queues/orders/messages/1", json={"status": bad}, headers=ADMIN),
        client.post("/queues/orders/status", json={"status": bad, "ids": [1]}, headers=ADMIN),
        client.post(
            "/queues/orders/status", json={"status": "Error", "fromStatus": bad}, headers=ADMIN
        ),
        client.put("/queues/orders/default-status", json={"status": bad}, headers=ADMIN),
    ]
    for response in refused:
        assert response.status_code in (400, 422), response.text
        assert "invalid status" in response.text, response.text
    assert snapshot(database) == before


def test_auth_and_routing_errors_have_the_documented_shape(client: httpx.Client) -> None:
    is_error_body(client.get("/queues"), 401)
    is_error_body(client.get("/queues", headers={"Authorization": "Bearer wrong"}), 403)
    is_error_body(client.post("/queues/orders", json={"message": {}}, headers=READ), 403)
    is_error_body(client.post("/queues/orders/pause", headers=READ), 403)
    is_error_body(client.post("/queues/orders/resume"), 401)
    assert client.post("/queues/orders/pause", headers=ADMIN).json()["paused"] is True
    is_error_body(client.get("/no/such/route", headers=READ), 404)
    is_error_body(client.delete("/queues", headers=ADMIN), 405)
    assert client.get("/queues").headers.get("content-type") == "application/json"
    # An unknown admin UI page is an HTML error page, not the API's JSON.
    page = client.get("/ui/no/such/page")
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "no such page: /ui/no/such/page" in page.text


def test_without_a_token_a_broken_body_gets_401_not_422(
    client: httpx.Client, database: Database
) -> None:
    before = snapshot(database)
    broken = {"content": b"{not json", "headers": {"content-type": "application/json"}}
    is_error_body(client.post("/queues/orders", **broken), 401)  # type: ignore[arg-type]
    is_error_body(client.put("/queues/orders/default-status", json={"x": 1}), 401)
    reader = {"content": b"{not json", "headers": {"content-type": "application/json", **READ}}
    is_error_body(client.post("/queues/orders", **reader), 403)  # type: ignore[arg-type]
    admin = {"content": b"{not json", "headers": {"content-type": "application/json", **ADMIN}}
    is_error_body(client.post("/queues/orders", **admin), 422)  # type: ignore[arg-type]
    assert snapshot(database) == before


def test_a_missing_queue_does_not_tell_where_the_database_lives(
    client: httpx.Client, database: Database
) -> None:
    host = database.shown_url.split("@")[-1].split("/")[0] or database.shown_url
    for response in (
        client.get("/queues/nope", headers=READ),
        client.get("/queues/nope/messages", headers=READ),
        client.put("/queues/nope/default-status", json={"status": "Paused"}, headers=ADMIN),
    ):
        is_error_body(response, 404)
        assert "queue 'nope' does not exist" in response.json()["error"]
        assert host not in response.text and database.shown_url not in response.text
    client.cookies.set("tablequeue_token", "read-secret")
    page = client.get("/ui/queues/nope")
    assert page.status_code == 404 and "queue &#39;nope&#39; does not exist" in page.text
    assert "does not exist in" not in page.text
    assert database.shown_url not in page.text and "<footer>" not in page.text
    client.cookies.set("tablequeue_token", "admin-secret")
    # An admin sees which database the UI serves (password masked) in every page's footer.
    assert f"<footer>{html.escape(database.shown_url)}</footer>" in client.get("/ui").text


def test_what_is_open_without_a_token(client: httpx.Client) -> None:
    """docs/guarantees.md: with tokens on, only probes, metrics, a queue's health and the API's
    description are open; every other queue route, the workers and UI pages want a token."""
    for path in ("/livez", "/readyz", "/metrics", "/docs", "/openapi.json"):
        assert client.get(path).status_code == 200, path
    health = client.get("/queues/orders/health")
    assert health.status_code == 200
    assert set(health.json()) == {
        "queue",
        "health",
        "reasons",
        "backlog",
        "oldestPendingSeconds",
        "workers",
    }
    # The API serves no per-queue figures, even beside a worker's counters in its process.
    worker_messages.labels(queue="orders", outcome="processed").inc(0)
    assert "orders" not in client.get("/metrics").text
    for path in (
        "/queues",
        "/queues/orders",
        "/queues/orders/messages",
        "/queues/orders/messages/1",
        "/workers",
        "/queues/orders/workers",
    ):
        is_error_body(client.get(path), 401)
    for page_path in ("/ui/queues/orders", "/ui/workers"):
        page = client.get(page_path, follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"].startswith("/ui/login")
