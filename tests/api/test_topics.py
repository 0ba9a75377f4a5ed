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
