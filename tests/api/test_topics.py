"""`POST /topics/{topic}/messages` over real HTTP, on every engine: deliveries per subscribed
queue, the admin token rule, the documented error body, and a topic nobody subscribes to."""

from __future__ import annotations

from collections.abc import Callable

from tablequeue import Database, Queue
from tablequeue.api.auth import Auth
from tests.support.api_server import api_client

MakeQueue = Callable[..., Queue]
ADMIN = {"Authorization": "Bearer admin-secret"}
READ = {"Authorization": "Bearer read-secret"}


def test_publish_over_http(database: Database, make_queue: MakeQueue) -> None:
    make_queue("mail", subscriptions=[{"topic": "order-placed"}])
    make_queue("review", subscriptions=[{"topic": "order-placed", "where": "Total > 100"}])
    auth = Auth(admin_token="admin-secret", read_token="read-secret")
    with api_client(database, auth) as client:
        body = {"message": {"OrderId": "A-1", "Total": 250}, "messageId": "A-1", "priority": 3}
        assert client.post("/topics/order-placed/messages", json=body).status_code == 401
        assert (
            client.post("/topics/order-placed/messages", json=body, headers=READ).status_code == 403
        )
        published = client.post("/topics/order-placed/messages", json=body, headers=ADMIN)
        assert published.status_code == 200, published.text
        data = published.json()
        assert data["topic"] == "order-placed"
        assert [(d["queue"], d["outcome"], d["messageId"]) for d in data["deliveries"]] == [
            ("mail", "inserted", "A-1"),
            ("review", "inserted", "A-1"),
        ]
        small = {"message": {"OrderId": "A-2", "Total": 5}}
        again = client.post("/topics/order-placed/messages", json=small, headers=ADMIN).json()
        assert [d["outcome"] for d in again["deliveries"]] == ["inserted", "filtered"]
        assert again["deliveries"][1]["id"] is None

        nobody = client.post("/topics/order-shipped/messages", json=small, headers=ADMIN)
        assert nobody.status_code == 200 and nobody.json() == {
            "topic": "order-shipped",
            "deliveries": [],
        }

        bad_topic = client.post("/topics/Order_Placed/messages", json=small, headers=ADMIN)
        assert bad_topic.status_code == 400
        assert bad_topic.json()["error"].startswith("invalid topic name 'Order_Placed'")
        bad_body = client.post(
            "/topics/order-placed/messages", json={"message": {}, "colour": 1}, headers=ADMIN
        )
        assert bad_body.status_code == 422 and bad_body.json()["detail"]
        assert (
            "/topics/{topic}/messages" in client.get("/openapi.json", headers=READ).json()["paths"]
        )
    review = database.queue("review").messages()
    assert [(m.message, m.priority) for m in review] == [({"OrderId": "A-1", "Total": 250}, 3)]
    assert database.queue("mail").count() == 2


def test_runtime_subscriptions_over_http(database: Database, make_queue: MakeQueue) -> None:
    make_queue(
        "mail",
        subscriptions=[{"topic": "order-placed"}],
        runtime_subscriptions={"allowed": True, "max_expiry": "1d"},
    )
    make_queue("closed")
    make_queue("forever", runtime_subscriptions={"allowed": True})
    auth = Auth(admin_token="admin-secret", read_token="read-secret")
    one = "/topics/order-shipped/subscriptions/mail"
    with api_client(database, auth) as client:
        body = {"where": "Total > 100", "expiresAfter": "2h"}
        assert client.put(one, json=body).status_code == 401
        assert client.put(one, json=body, headers=READ).status_code == 403
        assert client.delete(one, headers=READ).status_code == 403
        cross_site = ADMIN | {"Sec-Fetch-Site": "cross-site"}
        assert client.put(one, json=body, headers=cross_site).status_code == 403

        made = client.put(one, json=body, headers=ADMIN)
        assert made.status_code == 200, made.text
        shown = made.json()
        assert (shown["topic"], shown["queue"], shown["where"], shown["origin"]) == (
            "order-shipped",
            "mail",
            "Total > 100",
            "runtime",
        )
        assert shown["expiresAt"] is not None

        listed = client.get("/topics", headers=READ).json()["subscriptions"]
        assert [(s["topic"], s["origin"], s["expiresAt"] is None) for s in listed] == [
            ("order-placed", "spec", True),
            ("order-shipped", "runtime", False),
        ]
        only = client.get("/topics", params={"topic": "order-placed"}, headers=READ).json()
        assert [s["queue"] for s in only["subscriptions"]] == ["mail"]

        refused = client.put("/topics/t/subscriptions/closed", json={}, headers=ADMIN)
        assert refused.status_code == 409
        assert "queue 'closed'" in refused.json()["error"]
        assert "runtimeSubscriptions.allowed" in refused.json()["error"]
        spec_topic = client.put("/topics/order-placed/subscriptions/mail", json={}, headers=ADMIN)
        assert spec_topic.status_code == 409
        assert "one subscription per topic and queue" in spec_topic.json()["error"]
        too_long = client.put(one, json={"expiresAfter": "2d"}, headers=ADMIN)
        assert too_long.status_code == 400 and "maxExpiry (1d)" in too_long.json()["error"]
        both = {"expiresAfter": "1h", "expiresAt": "2100-01-01T00:00:00Z"}
        assert client.put(one, json=both, headers=ADMIN).status_code == 400
        bad_where = client.put(one, json={"where": "Total >"}, headers=ADMIN)
        assert bad_where.status_code == 400 and bad_where.json()["error"].startswith("where: ")
        assert client.put(one, json={"expiresAfter": "soon"}, headers=ADMIN).status_code == 422
        # Issue 44 (L2): an expiry whose UTC form is past the year 9999 was a bare 500 on a
        # queue without a maxExpiry.
        far = {"expiresAt": "9999-12-31T23:00:00-05:00"}
        past_9999 = client.put("/topics/t/subscriptions/forever", json=far, headers=ADMIN)
        assert past_9999.status_code == 400, past_9999.text
        assert "after the year 9999 in UTC" in past_9999.json()["error"]
        missing = client.put("/topics/t/subscriptions/nowhere", json={}, headers=ADMIN)
        assert missing.status_code == 404

        assert client.delete(one, headers=ADMIN).status_code == 204
        assert client.delete(one, headers=ADMIN).status_code == 404
        paths = client.get("/openapi.json", headers=READ).json()["paths"]
        assert {"/topics", "/topics/{topic}/subscriptions/{queue}"} <= set(paths)
    assert [s.topic for s in database.list_subscriptions()] == ["order-placed"]
    trail = [(e.who, e.via, e.action) for e in database.audit_entries(queue="mail")]
    assert trail == [("admin token", "api", "unsubscribe"), ("admin token", "api", "subscribe")]
