"""One API over two real databases at once (SQLite as `default`, a PostgreSQL server of the
test's own as `pg`), a queue named `orders` in both; then the PostgreSQL server stops."""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tablequeue import Database, Heartbeat, connect
from tablequeue.spec import QueueResource
from tests.support.api_server import api_client, api_process
from tests.support.postgres_server import PostgresServer, postgres_server

pytestmark = pytest.mark.slow


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A server this test may stop (the session's is shared)."""
    with postgres_server() as server:
        yield server


@pytest.fixture
def two(sqlite_url: str, own_postgres: PostgresServer) -> Iterator[dict[str, Database]]:
    with connect(sqlite_url) as local, connect(own_postgres.url) as pg:
        local.apply(QueueResource.from_name("orders", category="Shop"))
        pg.apply(QueueResource.from_name("orders", category="Billing"))
        pg.apply(QueueResource.from_name("invoices", category="Billing"))
        local.queue("orders").enqueue({"where": "sqlite"}, message_id="A-1")
        pg.queue("orders").enqueue({"where": "postgresql"}, message_id="A-1")
        yield {"default": local, "pg": pg}


@pytest.fixture
def client(two: dict[str, Database]) -> Iterator[httpx.Client]:
    with api_client(two) as client:
        yield client


def bodies(client: httpx.Client, path: str, **query: str) -> list[object]:
    response = client.get(path, params=query)
    assert response.status_code == 200, response.text
    return [item["message"] for item in response.json()["items"]]


def test_same_queue_name_in_two_databases(client: httpx.Client, two: dict[str, Database]) -> None:
    assert client.get("/databases").json() == [
        {"name": "default", "engine": "sqlite", "default": True},
        {"name": "pg", "engine": "postgresql", "default": False},
    ]
    assert bodies(client, "/queues/orders/messages") == [{"where": "sqlite"}]
    assert bodies(client, "/queues/orders/messages", database="pg") == [{"where": "postgresql"}]
    assert [q["name"] for q in client.get("/queues", params={"database": "pg"}).json()] == [
        "invoices",
        "orders",
    ]

    sent = client.post("/queues/orders?database=pg", json={"message": {"n": 2}})
    assert sent.status_code == 201, sent.text
    assert two["pg"].queue("orders").stats().counts["Pending"] == 2
    assert two["default"].queue("orders").stats().counts["Pending"] == 1

    unknown = client.get("/queues/orders", params={"database": "nope"})
    assert unknown.status_code == 404
    assert unknown.json()["error"] == "no database named 'nope' (served: default, pg)"
    assert client.get("/queues/invoices").status_code == 404  # only in pg

    found = client.get("/messages", params={"key": "A-1"}).json()
    assert sorted((m["database"], m["queue"], m["message"]["where"]) for m in found["items"]) == [
        ("default", "orders", "sqlite"),
        ("pg", "orders", "postgresql"),
    ]
    assert found["unreachable"] == []
    only_pg = client.get("/messages", params={"key": "A-1", "database": "pg"}).json()
    assert [m["database"] for m in only_pg["items"]] == ["pg"]

    operation = client.get("/openapi.json").json()["paths"]["/queues/{name}/messages"]["get"]
    assert "database" in {p["name"] for p in operation["parameters"]}


def test_the_workers_and_audit_pages_are_those_of_the_page_database(
    client: httpx.Client, two: dict[str, Database]
) -> None:
    two["pg"].heartbeat(Heartbeat("pg-worker", "orders", "pod-pg", 7, "0.1.0", 2.0, 1, 5, 2))
    local = Heartbeat("local-worker", "orders", "laptop", 8, "0.1.0", 2.0, 0, 0, 0)
    two["default"].heartbeat(local)
    pg_page = client.get("/ui/workers", params={"database": "pg"})
    assert pg_page.status_code == 200, pg_page.text
    assert "pg-worker" in pg_page.text and "local-worker" not in pg_page.text
    assert "<h1>Workers · pg</h1>" in pg_page.text
    # The header's links stay in the page's database; the default one needs no parameter.
    assert 'href="/ui/workers?database=pg"' in pg_page.text
    assert 'href="/ui/audit?database=pg"' in pg_page.text
    default_page = client.get("/ui/workers").text
    assert "local-worker" in default_page and "pg-worker" not in default_page
    assert 'href="/ui/workers"' in default_page


def test_the_cancel_buttons_cancel_in_the_page_database(
    client: httpx.Client, two: dict[str, Database]
) -> None:
    """Issue 44 (M1): on database pg's pages, Cancel (the message page's button and the queue
    page's form by tracking id) posted to the default database, which cancelled its message of
    the same tracking id. The forms' actions are posted as ui.js posts them."""
    tracking = uuid.uuid4()
    for database in two.values():
        database.queue("orders").enqueue({"n": 2}, message_id="T-1", tracking_id=tracking)
    pg_id = two["pg"].queue("orders").get_by_tracking_id(tracking).id
    page = client.get(f"/ui/queues/orders/messages/{pg_id}", params={"database": "pg"}).text
    action = form_action(page, "cancel")
    assert action == f"/jobs/{tracking}/cancel?database=pg", action
    queue_page = client.get("/ui/queues/orders", params={"database": "pg"}).text
    by_tracking_id = form_action(queue_page, "cancel", inside_section=True)
    assert by_tracking_id == "/jobs/{trackingId}/cancel?database=pg", by_tracking_id

    assert client.post(action).status_code == 200
    assert two["pg"].queue("orders").get_by_tracking_id(tracking).status == "Cancelled"
    assert two["default"].queue("orders").get_by_tracking_id(tracking).status == "Pending"


def form_action(page: str, element_id: str, inside_section: bool = False) -> str:
    """The data-action of the form with `id` (or of the first form in the section with it)."""
    start = page.index(f'id="{element_id}"')
    form = page.rindex("<form", 0, start) if not inside_section else page.index("<form", start)
    found = re.search(r'data-action="([^"]*)"', page[form:])
    assert found is not None
    return html.unescape(found.group(1))


def test_chart_list_gives_one_series_per_queue_from_any_database(client: httpx.Client) -> None:
    listed = client.get(
        "/charts/queues",
        params=[("queue", "pg/invoices"), ("queue", "orders"), ("queue", "pg/orders")],
    )
    assert listed.status_code == 200, listed.text
    charts = listed.json()
    assert [(q["database"], q["queue"]) for q in charts["queues"]] == [
        ("pg", "invoices"),
        ("default", "orders"),
        ("pg", "orders"),
    ]
    assert all(len(q["enqueued"]) == len(charts["time"]) == 60 for q in charts["queues"])

    missing = client.get("/charts/queues", params={"queue": "pg/nothing"})
    assert missing.status_code == 404
    assert "queue 'nothing' does not exist" in missing.json()["error"]
    assert client.get("/charts/queues", params={"queue": "nope/orders"}).status_code == 404
    bad = client.get("/charts/queues", params={"queue": "/orders"})
    assert bad.status_code == 400
    assert bad.json()["error"] == "queue '/orders': give NAME or DATABASE/NAME"
    assert client.get("/charts/queues").status_code == 422


def test_one_database_stops_the_other_still_works(
    client: httpx.Client, own_postgres: PostgresServer
) -> None:
    listed = client.get("/ui").text
    assert 'data-database="pg"' in listed and "postgresql" in listed and "Billing" in listed
    assert 'href="/ui/queues/orders?database=pg"' in listed
    assert 'href="/ui/queues/orders"' in listed
    both = client.get("/ui/find", params={"key": "A-1"}).text
    assert 'href="/ui/queues/orders/messages/1?database=pg"' in both
    assert 'href="/ui/queues/orders/messages/1"' in both

    own_postgres.stop()

    page = client.get("/ui")
    assert page.status_code == 200
    assert "Unreachable: database unavailable" in page.text
    assert 'href="/ui/queues/orders"' in page.text  # the SQLite database is still listed
    assert 'href="/ui/queues/orders?database=pg"' not in page.text
    assert bodies(client, "/queues/orders/messages") == [{"where": "sqlite"}]
    down = client.get("/queues/orders/messages", params={"database": "pg"})
    assert down.status_code == 503
    found = client.get("/messages", params={"key": "A-1"}).json()
    assert [m["database"] for m in found["items"]] == ["default"]
    assert [u["database"] for u in found["unreachable"]] == ["pg"]
    one_left = client.get("/ui/find", params={"key": "A-1"}).text  # listed, not opened
    assert "Not searched: database pg is unreachable: database unavailable" in one_left
    assert 'href="/ui/queues/orders/messages/1"' in one_left


def test_tablequeue_api_serves_the_databases_its_flags_name(tmp_path: Path) -> None:
    """`tablequeue api --db URL --database NAME=URL`, as docs/guides/api.md shows it."""
    urls = {name: f"sqlite:///{tmp_path / name}.db" for name in ("main", "archive")}
    for name, url in urls.items():
        with connect(url) as database:
            database.apply(QueueResource.from_name("orders", category=name))
            database.queue("orders").enqueue({"in": name})
    flags = ("--database", f"archive={urls['archive']}")
    with api_process(urls["main"], tmp_path, arguments=flags) as api:
        databases = httpx.get(f"{api.base}/databases").json()
        assert [(d["name"], d["engine"]) for d in databases] == [
            ("default", "sqlite"),
            ("archive", "sqlite"),
        ]
        for name, query in (("main", ""), ("archive", "?database=archive")):
            page = httpx.get(f"{api.base}/queues/orders/messages{query}").json()
            assert [m["message"] for m in page["items"]] == [{"in": name}]
        listed = httpx.get(f"{api.base}/charts/queues?queue=orders&queue=archive/orders&window=1h")
        assert [q["database"] for q in listed.json()["queues"]] == ["default", "archive"]
