"""The HTTP API over real HTTP, on every engine: every route and its error paths."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tablequeue import Database, Queue
from tablequeue.api.auth import Auth
from tests.support.api_server import api_client
from tests.support.snapshot import snapshot

MakeQueue = Callable[..., Queue]


@pytest.fixture
def client(database: Database, make_queue: MakeQueue) -> Iterator[httpx.Client]:
    make_queue("orders", category="Sales", keep_processed_for="forever")
    make_queue("audit-log", category="Ops")
    with api_client(database) as client:
        yield client


def test_probes_and_openapi(client: httpx.Client) -> None:
    assert client.get("/livez").json() == {"status": "ok"}
    assert client.get("/readyz").status_code == 200
    figures = client.get("/metrics")
    assert figures.status_code == 200 and "process_cpu_seconds_total" in figures.text
    spec = client.get("/openapi.json").json()
    assert "/queues/{name}/messages" in spec["paths"]
    assert client.get("/docs").status_code == 200


def test_enqueue_one_and_many(client: httpx.Client) -> None:
    one = client.post("/queues/orders", json={"message": {"OrderId": "A-1"}, "messageId": "A-1"})
    assert one.status_code == 201
    [result] = one.json()["results"]
    assert result["outcome"] == "inserted" and result["status"] == "Pending"
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    many = client.post(
        "/queues/orders",
        params={"newStatus": "true"},  # OnHold, new to the queue
        json=[
            {"message": {"n": 1}, "priority": 5, "headers": {"traceparent": "00-1"}},
            {"message": {"n": 2}, "at": later},
            {"message": {"n": 3}, "after": 60, "status": "OnHold"},
            {"message": {"OrderId": "A-1", "v": 2}, "messageId": "A-1"},
        ],
    )
    assert many.status_code == 201
    outcomes = [(r["outcome"], r["status"]) for r in many.json()["results"]]
    assert outcomes == [
        ("inserted", "Pending"),
        ("inserted", "Sleeping"),
        ("inserted", "OnHold"),
        ("updated", "Pending"),
    ]


def test_enqueue_with_a_tracking_id_of_the_sender(client: httpx.Client) -> None:
    chosen = "0b8a3c7e-5d1f-4a2b-9c3d-7e6f5a4b3c2d"
    one = client.post("/queues/orders", json={"message": {"n": 1}, "trackingId": chosen})
    assert one.status_code == 201
    assert one.json()["results"][0]["trackingId"] == chosen
    assert client.get(f"/jobs/{chosen}").json()["queue"] == "orders"
    again = client.post("/queues/orders", json=[{"message": {"n": 2}, "trackingId": chosen}])
    assert again.status_code == 409
    assert again.json()["error"].startswith(f"trackingId {chosen} is taken: message 1 of queue")
    malformed = client.post("/queues/orders", json={"message": {"n": 3}, "trackingId": "A-1"})
    assert malformed.status_code == 422
    assert "trackingId" in malformed.text and "valid UUID" in malformed.text
    assert client.get("/queues/orders").json()["counts"] == {"Pending": 1}


def test_queues_list_and_detail(client: httpx.Client) -> None:
    client.post("/queues/orders", json=[{"message": {"n": n}} for n in range(3)])
    queues = client.get("/queues").json()
    assert [(q["category"], q["name"]) for q in queues] == [
        ("Ops", "audit-log"),
        ("Sales", "orders"),
    ]
    orders = client.get("/queues/orders").json()
    assert orders["counts"] == {"Pending": 3} and orders["backlog"] == 3
    assert orders["health"] == "Healthy" and orders["table"] == "orders"
    assert orders["settings"]["keepProcessedFor"] == "forever"
    assert orders["defaultStatus"] == "Pending"


def test_messages_paging_filtering_and_cursor(client: httpx.Client) -> None:
    client.post(
        "/queues/orders", json=[{"message": {"n": n, "even": n % 2 == 0}} for n in range(25)]
    )
    seen: list[int] = []
    cursor = None
    while True:
        params: dict[str, str | int] = {"limit": 10, "where": "even == true"}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/queues/orders/messages", params=params).json()
        seen += [m["message"]["n"] for m in page["items"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == list(range(0, 25, 2))
    newest = client.get("/queues/orders/messages", params={"limit": 2, "order": "desc"}).json()
    assert [m["message"]["n"] for m in newest["items"]] == [24, 23]
    older = client.get(
        "/queues/orders/messages", params={"cursor": newest["nextCursor"], "limit": 2}
    )
    assert [m["message"]["n"] for m in older.json()["items"]] == [22, 21]
    by_status = client.get("/queues/orders/messages", params={"status": "Pending", "limit": 1000})
    assert len(by_status.json()["items"]) == 25


def test_message_get_patch_delete(client: httpx.Client) -> None:
    [created] = client.post("/queues/orders", json={"message": {"Sku": "bad"}}).json()["results"]
    url = f"/queues/orders/messages/{created['id']}"
    got = client.get(url).json()
    assert got["message"] == {"Sku": "bad"} and got["trackingId"] == created["trackingId"]
    patched = client.patch(
        url,
        json={"message": {"Sku": "good"}, "status": "OnHold", "priority": 3, "newStatus": True},
    )
    assert patched.status_code == 200
    assert (patched.json()["message"], patched.json()["status"]) == ({"Sku": "good"}, "OnHold")
    assert client.patch(url, json={}).status_code == 400
    assert client.delete(url).status_code == 204
    assert client.get(url).status_code == 404


def test_leased_messages_are_protected(client: httpx.Client, database: Database) -> None:
    [created] = client.post("/queues/orders", json={"message": {"n": 1}}).json()["results"]
    database.queue("orders").lease("w1", 1)
    url = f"/queues/orders/messages/{created['id']}"
    conflict = client.patch(url, json={"status": "Error"})
    assert conflict.status_code == 409 and "being processed" in conflict.json()["error"]
    assert client.delete(url).status_code == 409
    assert client.patch(url, json={"status": "Error", "force": True}).status_code == 200


def test_set_status_with_dry_run(client: httpx.Client) -> None:
    client.post("/queues/orders", json=[{"message": {"Sku": s}} for s in ("1", "2", "1")])
    request = {"status": "OnHold", "where": 'Sku == "1"', "dryRun": True, "newStatus": True}
    assert client.post("/queues/orders/status", json=request).json() == {
        "changed": 2,
        "dryRun": True,
    }
    assert client.get("/queues/orders").json()["counts"] == {"Pending": 3}
    request["dryRun"] = False
    assert client.post("/queues/orders/status", json=request).json()["changed"] == 2
    back = client.post("/queues/orders/status", json={"status": "Pending", "fromStatus": "OnHold"})
    assert back.json()["changed"] == 2


def test_default_status(client: httpx.Client) -> None:
    paused = {"status": "Paused", "newStatus": True}
    assert client.put("/queues/orders/default-status", json=paused).status_code == 200
    [r] = client.post("/queues/orders", json={"message": {}}).json()["results"]
    assert r["status"] == "Paused"
    assert client.get("/queues/orders").json()["defaultStatus"] == "Paused"


def test_pause_and_resume(client: httpx.Client, database: Database) -> None:
    paused = client.post("/queues/orders/pause")
    assert paused.status_code == 200, paused.text
    body = paused.json()
    assert (body["queue"], body["paused"], body["rateLimit"]) == ("orders", True, None)
    assert datetime.fromisoformat(body["pausedAt"]).tzinfo is not None
    assert client.get("/queues/orders").json()["paused"] is True
    listed = {q["name"]: q["paused"] for q in client.get("/queues").json()}
    assert listed == {"orders": True, "audit-log": False}
    [r] = client.post("/queues/orders", json={"message": {"n": 1}}).json()["results"]
    assert r["status"] == "Pending"  # enqueue still works
    assert database.queue("orders").lease("w1", 10).messages == []
    resumed = client.post("/queues/orders/resume").json()
    assert (resumed["paused"], resumed["pausedAt"]) == (False, None)
    assert len(database.queue("orders").lease("w1", 10).messages) == 1


def test_a_rate_limit_is_shown(client: httpx.Client, make_queue: MakeQueue) -> None:
    make_queue("mail", rate_limit={"messagesPerSecond": 2.5, "burst": 10})
    shown = client.get("/queues/mail").json()
    assert shown["rateLimit"] == {"messagesPerSecond": 2.5, "burst": 10}
    assert shown["settings"]["rateLimit"] == {"messagesPerSecond": 2.5, "burst": 10}
    assert client.get("/queues/orders").json()["rateLimit"] is None


def test_a_global_concurrency_is_shown(client: httpx.Client, make_queue: MakeQueue) -> None:
    make_queue("mail", global_concurrency=7)
    assert client.get("/queues/mail").json()["globalConcurrency"] == 7
    listed = {q["name"]: q for q in client.get("/queues").json()}
    assert listed["mail"]["globalConcurrency"] == 7
    assert client.post("/queues/mail/pause").json()["globalConcurrency"] == 7
    assert client.get("/queues/orders").json()["globalConcurrency"] is None


def test_jobs_by_tracking_id(client: httpx.Client, database: Database) -> None:
    [r] = client.post("/queues/audit-log", json={"message": {"n": 1}}).json()["results"]
    job = client.get(f"/jobs/{r['trackingId']}").json()
    assert (job["queue"], job["status"]) == ("audit-log", "Pending")
    cancelled = client.post(f"/jobs/{r['trackingId']}/cancel")
    assert cancelled.json()["status"] == "Cancelled"
    again = client.post(f"/jobs/{r['trackingId']}/cancel")
    assert again.status_code == 409 and "already Cancelled" in again.json()["error"]
    assert client.get("/jobs/00000000-0000-0000-0000-000000000000").status_code == 404
    assert client.get("/jobs/not-a-uuid").status_code == 400


BAD_REQUESTS = [
    ("post", "/queues/nope", {"message": {}}, 404, "does not exist"),
    ("post", "/queues/Bad;Name", {"message": {}}, 400, "invalid queue name"),
    ("post", "/queues/orders", {"msg": {}}, 422, "message"),
    ("post", "/queues/orders", {"message": {}, "status": "Leased"}, 422, "set only by leasing"),
    ("post", "/queues/orders", {"message": {}, "status": "x;y"}, 422, "invalid status"),
    ("post", "/queues/orders", {"message": {}, "priority": 10**6}, 422, "priority"),
    ("post", "/queues/orders", {"message": {}, "at": "2026-01-01T00:00:00"}, 422, "timezone"),
    (
        "post",
        "/queues/orders",
        {"message": {}, "at": "2026-01-01T00:00Z", "after": 5},
        422,
        "either",
    ),
    ("post", "/queues/orders", {"message": {}, "extra": 1}, 422, "extra"),
    ("post", "/queues/orders/status", {"status": "Pending"}, 400, "choose messages"),
    ("post", "/queues/orders/status", {"status": "Error", "where": "x == 1; --"}, 400, "predicate"),
    ("post", "/queues/orders/status", {"status": "Error", "where": "a <"}, 400, "predicate"),
    ("put", "/queues/orders/default-status", {"status": "Leased"}, 400, "set only by leasing"),
    ("put", "/queues/nope/default-status", {"status": "Paused"}, 404, "does not exist"),
    ("post", "/queues/nope/pause", None, 404, "does not exist"),
    ("post", "/queues/nope/resume", None, 404, "does not exist"),
    ("post", "/queues/Bad;Name/pause", None, 400, "invalid queue name"),
    ("get", "/queues/orders/messages?where=x%20%3D%3D", None, 400, "predicate"),
    ("get", "/queues/orders/messages?limit=0", None, 422, "limit"),
    ("get", "/queues/orders/messages?cursor=garbage", None, 400, "invalid cursor"),
    ("get", "/queues/orders/messages?status=a%27b", None, 400, "invalid status"),
    ("get", "/queues/orders/messages/999999", None, 404, "no message"),
    ("get", "/queues/orders/messages/abc", None, 422, "message_id"),
    ("patch", "/queues/orders/messages/1", {"status": "x y"}, 400, "invalid status"),
]


@pytest.mark.parametrize(("method", "url", "body", "status", "text"), BAD_REQUESTS)
def test_bad_requests_are_4xx_and_change_nothing(
    client: httpx.Client,
    database: Database,
    method: str,
    url: str,
    body: object,
    status: int,
    text: str,
) -> None:
    client.post("/queues/orders", json={"message": {"n": 1}})
    before = snapshot(database)
    response = client.request(method, url, json=body)
    assert response.status_code == status, response.text
    assert text in response.text
    assert set(response.json()) == {"error", "detail"}
    assert snapshot(database) == before


def test_garbage_bodies(client: httpx.Client, database: Database) -> None:
    before = snapshot(database)
    for content in (b"{bad json", b"\xff\xfe", b"", b"[", b"null", b'"text"', b"[1, 2]"):
        response = client.post(
            "/queues/orders", content=content, headers={"content-type": "application/json"}
        )
        assert 400 <= response.status_code < 500, (content, response.text)
    assert snapshot(database) == before


def test_body_size_limit(database: Database, make_queue: MakeQueue) -> None:
    make_queue("orders")
    with api_client(database, max_body_bytes=1000) as client:
        response = client.post("/queues/orders", json={"message": {"pad": "x" * 2000}})
        assert response.status_code == 413 and "over 1000 bytes" in response.json()["error"]

        def chunks() -> Iterator[bytes]:
            yield b'{"message": {"pad": "'
            for _ in range(10):
                yield b"x" * 500
            yield b'"}}'

        streamed = client.post(
            "/queues/orders", content=chunks(), headers={"content-type": "application/json"}
        )
        assert streamed.status_code == 413
    assert database.queue("orders").count() == 0


def test_tokens_separate_readers_from_admins(database: Database, make_queue: MakeQueue) -> None:
    make_queue("orders")
    auth = Auth(admin_token="admin-secret", read_token="read-secret")
    with api_client(database, auth) as client:
        assert client.get("/queues").status_code == 401
        assert client.get("/livez").status_code == 200
        read = {"Authorization": "Bearer read-secret"}
        admin = {"Authorization": "Bearer admin-secret"}
        assert client.get("/queues", headers=read).status_code == 200
        assert client.post("/queues/orders", json={"message": {}}, headers=read).status_code == 403
        wrong = {"Authorization": "Bearer nope"}
        assert client.get("/queues", headers=wrong).status_code == 403
        assert client.post("/queues/orders", json={"message": {}}, headers=admin).status_code == 201
        client.cookies.set("tablequeue_token", "read-secret")
        assert client.get("/queues").status_code == 200
    assert database.queue("orders").count() == 1


def test_message_json_is_the_core_message(client: httpx.Client, database: Database) -> None:
    """The API shows every field of the core's `Message` under the keys of `Message.to_json`."""

    def instants(shown: dict[str, Any]) -> dict[str, Any]:
        """Times as instants: the API writes UTC as `Z`, `to_json` as `+00:00`."""
        parsed = {}
        for key, value in shown.items():
            try:
                parsed[key] = datetime.fromisoformat(value)
            except (TypeError, ValueError):
                parsed[key] = value
        return parsed

    body = {"message": {"Sku": "1"}, "messageId": "M-1", "headers": {"h": 1}}
    [created] = client.post("/queues/orders", json=body).json()["results"]
    shown = client.get(f"/queues/orders/messages/{created['id']}").json()
    stored = database.queue("orders").get(created["id"]).to_json()
    assert instants(shown) == instants(stored)
    job = client.get(f"/jobs/{created['trackingId']}").json()
    assert (job.pop("queue"), job.pop("source")) == ("orders", "queue")
    assert job == {key: shown[key] for key in job}


@pytest.mark.parametrize(
    ("api_url", "status"),
    [
        ("/queues/nope", 404),
        ("/queues/Bad;Name", 400),
        ("/queues/orders/messages/12345", 404),
    ],
)
def test_the_ui_answers_core_errors_with_the_api_status(
    client: httpx.Client, api_url: str, status: int
) -> None:
    api = client.get(api_url)
    page = client.get("/ui" + api_url)
    assert (api.status_code, page.status_code) == (status, status)
    assert api.headers["content-type"] == "application/json"
    assert page.headers["content-type"].startswith("text/html")
    assert api.json()["error"] in page.text.replace("&#39;", "'").replace("&#34;", '"')
