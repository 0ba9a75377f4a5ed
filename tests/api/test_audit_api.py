"""The audit trail over real HTTP on SQLite: changes through the API are the admin token's
(via `api`, or `ui` when a browser sent them), with the client's address; either token reads
the trail, newest first, page by page; a refused change records nothing.

Recording itself is the core's, tested on every engine in tests/core/conformance/test_audit.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tablequeue import Database, connect
from tablequeue.api.auth import Auth
from tablequeue.spec import QueueResource
from tests.support.api_server import api_client, api_process

ADMIN = {"Authorization": "Bearer admin-secret"}
READ = {"Authorization": "Bearer read-secret"}


@pytest.fixture
def database(sqlite_url: str) -> Iterator[Database]:
    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("orders"))
        database.apply(QueueResource.from_name("invoices"))
        yield database


def test_changes_are_the_callers_and_either_token_reads_them(database: Database) -> None:
    ids = [database.queue("orders").enqueue({"n": n}).id for n in range(3)]
    auth = Auth(admin_token="admin-secret", read_token="read-secret")
    with api_client(database, auth) as client:
        assert client.post("/queues/orders/pause", headers=ADMIN).status_code == 200
        refused = client.post("/queues/orders/resume", headers=READ)
        assert refused.status_code == 403
        # The admin UI's signed-in browser: the token in its cookie, Sec-Fetch-Site sent.
        browser = {"Sec-Fetch-Site": "same-origin", "Cookie": "tablequeue_token=admin-secret"}
        changed = client.post(
            "/queues/orders/status",
            json={"status": "Error", "ids": ids[:2]},
            headers=browser,
        )
        assert changed.status_code == 200
        # Issue 44 (L4): a client with the bearer token sending Sec-Fetch-Site is not the UI.
        claims_ui = ADMIN | {"Sec-Fetch-Site": "same-origin"}
        client.post("/queues/invoices/pause", headers=claims_ui).raise_for_status()
        assert client.get("/audit").status_code == 401
        trail = client.get("/audit", headers=READ).json()
        orders_only = client.get("/audit", params={"queue": "orders"}, headers=READ).json()
    assert [(e["action"], e["queue"], e["via"]) for e in trail["entries"]] == [
        ("pause", "invoices", "api"),
        ("set-status", "orders", "ui"),
        ("pause", "orders", "api"),
    ]
    status_change = trail["entries"][1]
    assert status_change["target"] == {"status": "Error", "ids": ids[:2]}
    assert status_change["rows"] == 2
    assert {(e["who"], e["address"]) for e in trail["entries"]} == {("admin token", "127.0.0.1")}
    assert trail["nextBeforeId"] is None
    assert [e["queue"] for e in orders_only["entries"]] == ["orders", "orders"]


def test_the_trail_pages_back_and_names_a_bad_limit(database: Database) -> None:
    with api_client(database) as client:
        for _ in range(5):
            client.post("/queues/orders/pause").raise_for_status()
        first = client.get("/audit", params={"limit": 2}).json()
        second = client.get("/audit", params={"limit": 2, "beforeId": first["nextBeforeId"]}).json()
        third = client.get("/audit", params={"limit": 2, "beforeId": second["nextBeforeId"]}).json()
        too_many = client.get("/audit", params={"limit": 5000})
    pages = [first, second, third]
    ids = [e["id"] for page in pages for e in page["entries"]]
    assert len(ids) == 5 and ids == sorted(ids, reverse=True)
    assert {e["who"] for page in pages for e in page["entries"]} == {
        "open API (no token configured)"
    }
    assert third["nextBeforeId"] is None
    assert too_many.status_code == 422 and "limit" in too_many.text


def test_the_address_is_the_connections_not_a_forwarded_one(
    database: Database, sqlite_url: str, tmp_path: Path
) -> None:
    """Issue 44 (L4): uvicorn believed X-Forwarded-For from loopback, so any local process
    chose the address in the audit trail. Only proxies named in FORWARDED_ALLOW_IPS count."""
    tokens = {"TABLEQUEUE_API_ADMIN_TOKEN": "admin-secret"}
    forged = ADMIN | {"X-Forwarded-For": "203.0.113.9"}
    with api_process(sqlite_url, tmp_path, tokens) as api:
        assert httpx.post(f"{api.base}/queues/orders/pause", headers=forged).status_code == 200
    with api_process(sqlite_url, tmp_path, tokens | {"FORWARDED_ALLOW_IPS": "127.0.0.1"}) as api:
        assert httpx.post(f"{api.base}/queues/orders/resume", headers=forged).status_code == 200
    addresses = [(e.action, e.address) for e in database.audit_entries()]
    assert addresses == [("resume", "203.0.113.9"), ("pause", "127.0.0.1")]
