"""The API behind the admin UI's ticked rows and find box, over real HTTP on SQLite: delete and
cancel by ids, find across queues, their token rules and the cross-origin guard (api/csrf.py).

The SQL is the core's, tested on every engine in
tests/core/conformance/test_selected_messages.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tablequeue import Database, Queue, connect
from tablequeue.api.auth import Auth
from tablequeue.spec import QueueResource
from tests.support.api_server import api_client


@pytest.fixture
def database(sqlite_url: str) -> Iterator[Database]:
    with connect(sqlite_url) as database:
        database.apply(QueueResource.from_name("orders"))
        database.apply(QueueResource.from_name("invoices"))
        yield database


@pytest.fixture
def orders(database: Database) -> Queue:
    return database.queue("orders")


def test_delete_and_cancel_by_ids(database: Database, orders: Queue) -> None:
    ids = [orders.enqueue({"n": n}).id for n in range(4)]
    with api_client(database) as client:
        cancelled = client.post("/queues/orders/cancel", json={"ids": ids[:2]})
        assert cancelled.json() == {"cancelled": 2}
        assert client.post("/queues/orders/cancel", json={"ids": ids[:2]}).json() == {
            "cancelled": 0
        }
        deleted = client.post("/queues/orders/delete", json={"ids": ids[1:3]})
        assert deleted.json() == {"deleted": 2}
        empty = client.post("/queues/orders/delete", json={"ids": []})
        assert empty.status_code == 422
        forced = client.post("/queues/orders/cancel", json={"ids": ids, "force": True})
        assert forced.status_code == 400
        assert "force is for delete" in forced.json()["error"]
    assert [(m.id, m.status) for m in orders.messages()] == [
        (ids[0], "Cancelled"),
        (ids[3], "Pending"),
    ]


def test_find_across_queues(database: Database, orders: Queue) -> None:
    mine = orders.enqueue({"n": 1}, message_id="A-7")
    database.queue("invoices").enqueue({"n": 2}, message_id="A-7")
    with api_client(database) as client:
        found = client.get("/messages", params={"key": "A-7"}).json()["items"]
        assert sorted((f["queue"], f["messageId"]) for f in found) == [
            ("invoices", "A-7"),
            ("orders", "A-7"),
        ]
        [one] = client.get("/messages", params={"key": str(mine.tracking_id)}).json()["items"]
        assert (one["database"], one["queue"], one["id"]) == ("default", "orders", mine.id)
        nothing = client.get("/messages", params={"key": "nothing"}).json()
        assert nothing == {"items": [], "unreachable": []}
        assert client.get("/messages", params={"key": ""}).status_code == 422
        page = client.get("/ui/find", params={"key": str(mine.tracking_id)})
        assert page.status_code == 303
        assert page.headers["location"] == f"/ui/queues/orders/messages/{mine.id}"
        blank = client.get("/ui/find", params={"key": " "})
        assert "give a tracking id or a message id" in blank.text


def test_only_admins_from_this_origin_change_chosen_rows(database: Database, orders: Queue) -> None:
    ids = [orders.enqueue({"n": n}).id for n in range(2)]
    auth = Auth(admin_token="admin-secret", read_token="read-secret")
    with api_client(database, auth) as client:
        reader = {"Authorization": "Bearer read-secret"}
        admin = {"Authorization": "Bearer admin-secret"}
        for path in ("/queues/orders/delete", "/queues/orders/cancel"):
            assert client.post(path, json={"ids": ids}, headers=reader).status_code == 403
            for foreign in ({"Sec-Fetch-Site": "cross-site"}, {"Origin": "http://evil.test"}):
                refused = client.post(path, json={"ids": ids}, headers=admin | foreign)
                assert refused.status_code == 403
                assert "cross-origin request refused" in refused.json()["error"]
        assert client.get("/messages", params={"key": "x"}, headers=reader).status_code == 200
        same_site = admin | {"Sec-Fetch-Site": "same-origin"}
        kept = client.post("/queues/orders/delete", json={"ids": ids[:1]}, headers=same_site)
        assert kept.json() == {"deleted": 1}
    assert [m.id for m in orders.messages()] == ids[1:]


def test_read_only_pages_offer_no_write_controls(database: Database, orders: Queue) -> None:
    message = orders.enqueue({"n": 1})
    auth = Auth(admin_token="admin-secret", read_token="read-secret")
    with api_client(database, auth) as client:
        for token, shown in (("read-secret", False), ("admin-secret", True)):
            client.cookies.set("tablequeue_token", token)
            queue_page = client.get("/ui/queues/orders").text
            message_page = client.get(f"/ui/queues/orders/messages/{message.id}").text
            bulk_page = client.get("/ui/queues/orders/bulk?to=OnHold&status=Pending").text
            assert 'data-count="1"' in bulk_page
            pages = queue_page + message_page + bulk_page
            for marker in ('id="selection"', 'id="enqueue"', 'data-method="PATCH"', 'id="apply"'):
                assert (marker in pages) is shown, (token, marker)
            assert "Sign out" in queue_page
        client.cookies.clear()
        assert "Sign out" not in client.get("/ui/login").text


def test_a_bad_key_is_named(database: Database) -> None:
    with api_client(database) as client:
        long_key = client.get("/messages", params={"key": "x" * 401})
        assert long_key.status_code == 422
        assert "key" in long_key.text and "400" in long_key.text
