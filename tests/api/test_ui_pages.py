"""The admin UI's pages over plain HTTP, on every engine: paging, errors, escaping, sign-in.

No browser needed; test_ui_browser.py drives the same pages in Chromium.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablequeue import Database, NewMessage, Queue
from tablequeue.api.auth import COOKIE, Auth
from tests.support.api_server import api_client
from tests.support.snapshot import snapshot

MakeQueue = Callable[..., Queue]


@pytest.fixture
def orders(make_queue: MakeQueue) -> Queue:
    return make_queue("orders", category="Sales")


@pytest.fixture
def client(database: Database, orders: Queue) -> Iterator[httpx.Client]:
    with api_client(database) as client:
        yield client


def ids_on(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr data-id="(\d+)"', html)]


def test_pages_are_keyset_paged(client: httpx.Client, orders: Queue) -> None:
    orders.enqueue_many([NewMessage(message={"n": n, "even": n % 2 == 0}) for n in range(120)])
    first = client.get("/ui/queues/orders").text
    assert ids_on(first) == list(range(120, 70, -1))
    assert 'rel="prev"' not in first
    [older] = re.findall(r'href="([^"]+)" rel="next"', first)
    second = client.get(older.replace("&amp;", "&")).text
    assert ids_on(second) == list(range(70, 20, -1))
    [newer] = re.findall(r'href="([^"]+)" rel="prev"', second)
    assert ids_on(client.get(newer.replace("&amp;", "&")).text) == list(range(120, 70, -1))
    [last] = re.findall(r'href="([^"]+)" rel="next"', second)
    third = client.get(last.replace("&amp;", "&")).text
    assert ids_on(third) == list(range(20, 0, -1)) and 'rel="next"' not in third
    oldest = client.get("/ui/queues/orders", params={"order": "asc", "where": "even == true"})
    assert ids_on(oldest.text) == list(range(1, 100, 2))
    [following] = re.findall(r'href="([^"]+)" rel="next"', oldest.text)
    assert "where=even" in following and "order=asc" in following
    assert ids_on(client.get(following.replace("&amp;", "&")).text) == list(range(101, 120, 2))


@pytest.mark.parametrize(
    ("params", "shown"),
    [
        ({"where": "a <"}, "invalid predicate: expected a value after &#39;&lt;&#39; at column 3"),
        ({"where": "x == 1; DROP TABLE orders"}, "invalid predicate at column 7: unexpected"),
        ({"status": "x'y"}, "invalid status &#34;x&#39;y&#34;"),
        ({"after": "abc"}, "invalid page position &#39;abc&#39;"),
    ],
)
def test_bad_filters_are_one_line_errors(
    client: httpx.Client, params: dict[str, str], shown: str
) -> None:
    response = client.get("/ui/queues/orders", params=params)
    assert response.status_code == 200
    [error] = re.findall(r'<p class="alert error" id="filter-error">([^<]*)</p>', response.text)
    assert error.startswith(shown)
    assert "\n" not in error


def test_unknown_things_are_html_errors(client: httpx.Client) -> None:
    for url, code, text in [
        ("/ui/queues/nope", 404, "does not exist"),
        ("/ui/queues/Bad;Name", 400, "invalid queue name"),
        ("/ui/queues/orders/messages/12345", 404, "no message with id 12345"),
        ("/ui/queues/orders/messages/abc", 404, "no message with id"),
    ]:
        response = client.get(url)
        assert response.status_code == code, url
        assert response.headers["content-type"].startswith("text/html")
        assert text in response.text


def test_user_text_is_escaped(client: httpx.Client, orders: Queue) -> None:
    evil = "<script>alert(1)</script>"
    message = orders.enqueue({"x": evil}, message_id=evil)
    for url in ["/ui/queues/orders", f"/ui/queues/orders/messages/{message.id}"]:
        html = client.get(url).text
        assert evil not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    html = client.get("/ui/queues/orders", params={"where": f'x == "{evil}"'}).text
    assert evil not in html and ids_on(html) == [message.id]


def test_bulk_confirmation_only_counts(
    client: httpx.Client, database: Database, orders: Queue
) -> None:
    orders.enqueue_many([NewMessage(message={"Sku": s}) for s in ("1", "2", "1", "1")])
    before = snapshot(database)
    page = client.get("/ui/queues/orders/bulk", params={"where": 'Sku == "1"', "to": "OnHold"})
    assert 'data-count="3"' in page.text and "Change 3 messages" in page.text
    nothing = client.get("/ui/queues/orders/bulk", params={"status": "Error", "to": "Pending"})
    assert 'data-count="0"' in nothing.text and 'id="apply"' not in nothing.text
    leased = client.get("/ui/queues/orders/bulk", params={"status": "Pending", "to": "Leased"})
    assert "set only by leasing" in leased.text and 'id="apply"' not in leased.text
    unfiltered = client.get("/ui/queues/orders/bulk", params={"to": "Pending"})
    assert "choose messages by id, by current status or by predicate" in unfiltered.text
    assert snapshot(database) == before


def test_enqueue_example_falls_back_to_the_newest_body(client: httpx.Client, orders: Queue) -> None:
    def prefilled() -> Any:
        html = client.get("/ui/queues/orders").text
        [text] = re.findall(r"<textarea name=\"message\"[^>]*>([^<]*)</textarea>", html)
        return json.loads(text.replace("&#34;", '"').replace("&amp;", "&"))

    assert prefilled() == {}
    orders.enqueue({"OrderId": "A-1"})
    orders.enqueue({"OrderId": "A-2", "Lines": [{"Sku": "123", "Qty": 2}]})
    assert prefilled() == {"OrderId": "A-2", "Lines": [{"Sku": "123", "Qty": 2}]}


def test_root_redirects_and_ui_is_not_in_the_api_schema(client: httpx.Client) -> None:
    root = client.get("/", follow_redirects=False)
    assert (root.status_code, root.headers["location"]) == (307, "/ui")
    paths = client.get("/openapi.json").json()["paths"]
    assert not [path for path in paths if path.startswith("/ui") or path == "/"]
    assert client.get("/ui/static/ui.css").headers["content-type"].startswith("text/css")
    assert "javascript" in client.get("/ui/static/ui.js").headers["content-type"]


def test_pages_need_a_token_when_tokens_are_configured(database: Database, orders: Queue) -> None:
    auth = Auth(admin_token="admin-secret", read_token="read-secret")
    with api_client(database, auth) as client:
        page = client.get("/ui/queues/orders?status=Error", follow_redirects=False)
        assert page.status_code == 303
        assert page.headers["location"] == "/ui/login?next=" + quote(
            "/ui/queues/orders?status=Error"
        )
        client.cookies.set(COOKIE, "old")
        assert client.get("/ui", follow_redirects=False).status_code == 303
        client.cookies.clear()
        assert client.get("/ui/login").status_code == 200

        bad = client.post("/ui/login", data={"token": "nope", "next": "/ui"})
        assert bad.status_code == 401 and COOKIE not in bad.cookies
        cross = client.post(
            "/ui/login",
            data={"token": "admin-secret"},
            headers={"origin": "https://evil.example"},
        )
        assert cross.status_code == 403
        good = client.post(
            "/ui/login",
            data={"token": "read-secret", "next": "https://evil.example/"},
            follow_redirects=False,
        )
        assert (good.status_code, good.headers["location"]) == (303, "/ui")
        set_cookie = good.headers["set-cookie"]
        assert "HttpOnly" in set_cookie and "SameSite=strict" in set_cookie
        assert client.cookies[COOKIE] == "read-secret"
        assert client.get("/ui").status_code == 200
        # The cookie signs in the JSON API too, with the token's rights.
        change = client.put("/queues/orders/default-status", json={"status": "Paused"})
        assert change.status_code == 403
        signed_out = client.post("/ui/logout", follow_redirects=False)
        assert signed_out.headers["location"] == "/ui/login" and COOKIE not in client.cookies
        assert client.get("/ui", follow_redirects=False).status_code == 303


def test_pages_never_fail_on_odd_input(
    client: httpx.Client, database: Database, orders: Queue
) -> None:
    """Whatever is typed into a filter, a URL or a page position: an answer, never a 5xx."""
    orders.enqueue_many([NewMessage(message={"Sku": str(n), "n": n}) for n in range(5)])
    before = snapshot(database)
    text = st.text(max_size=40) | st.sampled_from(
        ["", "Error", "Pending", 'Sku == "1"', "n >= 2", "a <", "9" * 30, "-1", "\x00", "²"]
    )
    pages = st.sampled_from(["/ui/queues/orders", "/ui/queues/orders/bulk"])
    params = st.fixed_dictionaries(
        {},
        optional={
            "status": text,
            "where": text,
            "order": text,
            "after": text,
            "before": text,
            "to": text,
        },
    )

    @settings(
        max_examples=120,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(page=pages, query=params, message=text)
    def run(page: str, query: dict[str, str], message: str) -> None:
        response = client.get(page, params=query)
        assert response.status_code < 500, (page, query, response.text[:300])
        one = client.get(f"/ui/queues/orders/messages/{quote(message, safe='')}")
        assert one.status_code < 500, (message, one.text[:300])

    run()
    assert snapshot(database) == before
