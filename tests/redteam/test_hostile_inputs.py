"""Hostile input at its maximum size (issue 29), for every string a user can set in a Queue and in
the HTTP API: each answer comes within a deadline and is an acceptance or a clear refusal, never
a 5xx or another exception. Found this way: a schedule's strings took cubic time to check (a
1,600-character one stalled the open health route for seconds); the run-now route answered a
name with NUL with a 500.

The deadlines are far above the milliseconds each check takes and far below what a super-linear
check of these sizes takes (minutes to days): they only separate "answers" from "hangs". A check
in this process is bounded by the test's timeout (pytest-timeout's SIGALRM interrupts even a
regular expression); the HTTP API runs as its own process, bounded by the client's timeout."""

from __future__ import annotations

import concurrent.futures
import copy
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import sqlalchemy as sa
from pydantic import ValidationError

from tablequeue import Database, connect
from tablequeue.errors import TableQueueError
from tablequeue.limits import MAX_SCHEDULE_TEMPLATE_BYTES
from tablequeue.spec import QueueResource
from tests.support.api_server import api_process

DEADLINE = 20.0
"""Seconds one HTTP request may take before it counts as a hang."""
UNBOUNDED = 64 << 10
"""The length tried where the schema sets no bound (the API server's own limit is ~1.5 MB)."""

HOSTILE: dict[str, Callable[[int], str]] = {
    "open placeholder, spaces": lambda n: "{{" + " " * (n - 2),
    "open placeholder with format, spaces": lambda n: "{{ tick:" + " " * (n - 8),
    "placeholders": lambda n: "{{ }}" * (n // 5),
    "braces": lambda n: "{" * n,
    "backslashes": lambda n: "\\" * n,
    "brackets": lambda n: "[" * n,
    "parentheses": lambda n: "(" * n,
    "quotes": lambda n: '"' * n,
    "cron-ish": lambda n: ("1-2," * n)[:n],
    "steps": lambda n: ("*/" * n)[:n],
    "digits": lambda n: "9" * n,
    "dots": lambda n: ("a." * n)[:n],
    "spaces then a letter": lambda n: " " * (n - 1) + "a",
    "two-byte letters": lambda n: "é" * n,
    "trailing newline": lambda n: "a" * (n - 1) + "\n",
    "NUL": lambda n: "a" + "\x00" * (n - 1),
}

FULL: dict[str, Any] = {
    "apiVersion": "tablequeue.dev/v1",
    "kind": "Queue",
    "metadata": {"name": "orders"},
    "spec": {
        "table": "orders",
        "category": "Sales",
        "defaultStatus": "Pending",
        "keepProcessedFor": "1d",
        "keepResultsFor": "1d",
        "exampleMessage": {"OrderId": "A-1"},
        "runtimeSubscriptions": {"allowed": True, "maxExpiry": "7d"},
        "workers": {"handler": {"http": {"path": "/process"}}, "image": "worker:1"},
        "indexes": [{"path": "Product.Sku", "type": "text"}],
        "schedules": [
            {
                "name": "nightly",
                "cron": "0 2 * * *",
                "timeZone": "Europe/Oslo",
                "message": {"run": "{{ tick:%Y-%m-%d }}"},
                "messageId": "nightly-{{ tick:%Y%m%d }}",
                "headers": {"source": "{{ schedule }}"},
            }
        ],
        "subscriptions": [{"topic": "orders.created", "where": 'Sku == "123"'}],
    },
}


def string_leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from string_leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from string_leaves(item, (*path, index))


def max_length(schema: dict[str, Any], path: tuple[Any, ...]) -> int:
    """The schema's maxLength for the string at `path` (UNBOUNDED where there is none; inside a
    free-form value, the schedule template's limit)."""
    definitions = schema.get("$defs", {})
    node = schema
    for key in path:
        node = _resolved(node, definitions)
        if isinstance(key, int):
            node = node["items"]
        elif key in node.get("properties", {}):
            node = node["properties"][key]
        else:  # inside a free-form object (message, headers, exampleMessage)
            return MAX_SCHEDULE_TEMPLATE_BYTES // 2 if "schedules" in path else UNBOUNDED
    return int(_resolved(node, definitions).get("maxLength", UNBOUNDED))


def _resolved(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    while True:
        if "$ref" in node:
            node = definitions[node["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in node:
            node = next(n for n in node["anyOf"] if n.get("type") != "null")
        else:
            return node


def with_value(document: dict[str, Any], path: tuple[Any, ...], value: str) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return changed


@pytest.fixture(scope="module")
def sqlite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    with connect(f"sqlite:///{tmp_path_factory.mktemp('hostile') / 'queue.db'}") as database:
        yield database


def test_the_full_example_is_valid(sqlite: Database) -> None:
    """The template of the test below: every string of it is a valid value."""
    assert sqlite.apply(QueueResource.model_validate(FULL)) in ("created", "unchanged")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("path", list(string_leaves(FULL)), ids=lambda p: ".".join(map(str, p)))
def test_every_string_of_a_queue_at_its_longest_is_checked_at_once(
    sqlite: Database, path: tuple[Any, ...]
) -> None:
    schema = QueueResource.model_json_schema(by_alias=True)
    longest = max_length(schema, path)
    for name, hostile in HOSTILE.items():
        document = with_value(FULL, path, hostile(longest))

        try:
            sqlite.apply(QueueResource.model_validate(document))
        except (ValidationError, TableQueueError) as refused:
            assert str(refused).strip(), name


def test_a_schedule_template_over_its_limit_is_refused_with_its_size() -> None:
    document = with_value(
        FULL, ("spec", "schedules", 0, "message"), "x" * MAX_SCHEDULE_TEMPLATE_BYTES
    )
    with pytest.raises(
        ValidationError, match=rf"bytes of JSON: at most {MAX_SCHEDULE_TEMPLATE_BYTES}"
    ):
        QueueResource.model_validate(document)


@pytest.fixture(params=["sqlite_url", "postgres_url"])
def served(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Database, httpx.Client]]:
    """The full example applied, and a client of `tablequeue api` serving its database."""
    url = request.getfixturevalue(request.param)
    with connect(url) as database:
        database.apply(QueueResource.model_validate(FULL))
        with (
            api_process(url, tmp_path) as api,
            httpx.Client(base_url=api.base, timeout=DEADLINE) as client,
        ):
            yield database, client


def test_a_queue_with_the_longest_hostile_schedule_keeps_the_open_routes_quick(
    served: tuple[Database, httpx.Client],
) -> None:
    database, client = served
    hostile = HOSTILE["open placeholder, spaces"](MAX_SCHEDULE_TEMPLATE_BYTES // 2)
    database.apply(
        QueueResource.model_validate(with_value(FULL, ("spec", "schedules", 0, "message"), hostile))
    )
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        checks = [pool.submit(client.get, "/queues/orders/health") for _ in range(8)]
        assert client.get("/livez").status_code == 200
        assert [check.result().status_code for check in checks] == [200] * 8


def test_the_http_api_answers_hostile_strings_at_their_longest_without_a_server_error(
    served: tuple[Database, httpx.Client],
) -> None:
    _, client = served
    for name, hostile in HOSTILE.items():
        requests = [
            ("POST", "/queues/orders", {"message": {"k": hostile(4000)}}),
            ("POST", "/queues/orders", {"message": {}, "messageId": hostile(400)}),
            ("POST", "/queues/orders", {"message": {}, "status": hostile(64)}),
            ("POST", "/queues/orders", {"message": {}, "headers": {hostile(200): "v"}}),
            ("GET", "/queues/orders/messages?where=" + quote(hostile(4000)), None),
            ("GET", "/queues/orders/messages?status=" + quote(hostile(64)), None),
            ("POST", "/queues/orders/status", {"status": "Error", "where": hostile(4000)}),
            ("POST", "/topics/" + quote(hostile(63), safe="") + "/messages", {"message": {}}),
            ("POST", "/queues/orders/schedules/" + quote(hostile(63), safe="") + "/run", None),
            ("GET", "/queues/" + quote(hostile(63), safe="") + "/health", None),
            ("GET", "/jobs/" + quote(hostile(36), safe=""), None),
            *_newer_surfaces(hostile),
        ]
        for method, target, body in requests:
            answer = client.request(method, target, json=body)
            assert answer.status_code < 500, (name, method, target[:80], answer.text[:300])
            assert answer.status_code < 300 or answer.json()["error"], (name, target[:80])


def _newer_surfaces(hostile: Callable[[int], str]) -> list[tuple[str, str, Any]]:
    """What the waves after issue 29 added (issue 44): correlation ids and labels, group keys,
    caller-chosen tracking ids, dedupe, the message search's filters and cursor, the find box,
    runtime subscriptions, per-row cancels, charts, the audit listing, the database picker."""

    def q(n: int) -> str:
        return quote(hostile(n), safe="")

    messages = "/queues/orders/messages?"
    return [
        ("POST", "/queues/orders", {"message": {}, "correlationId": hostile(200)}),
        ("POST", "/queues/orders", {"message": {}, "label": hostile(200)}),
        ("POST", "/queues/orders", {"message": {}, "groupKey": hostile(200)}),
        ("POST", "/queues/orders", {"message": {}, "trackingId": hostile(36)}),
        ("POST", f"/queues/orders?dedupe={q(64)}", {"message": {}, "messageId": "d"}),
        ("POST", f"/queues/orders?dedupe=window&dedupeWindow={q(64)}", {"message": {}}),
        ("GET", f"{messages}correlationId={q(200)}", None),
        ("GET", f"{messages}errorContains={q(4000)}", None),
        ("GET", f"{messages}createdAfter={q(64)}&updatedBefore={q(64)}", None),
        ("GET", f"{messages}cursor={q(400)}", None),
        ("GET", f"{messages}order={q(64)}&limit={q(20)}", None),
        ("GET", f"/messages?key={q(400)}", None),
        ("PUT", f"/topics/{q(63)}/subscriptions/orders", {"where": hostile(4000)}),
        ("PUT", "/topics/t/subscriptions/orders", {"where": hostile(4000)}),
        ("PUT", "/topics/t/subscriptions/orders", {"expiresAt": hostile(64)}),
        ("POST", "/queues/orders/cancel", {"where": hostile(4000)}),
        ("POST", "/queues/orders/cancel", {"ids": [hostile(20)]}),
        ("POST", f"/jobs/{q(36)}/cancel", None),
        ("PATCH", "/queues/orders/messages/1", {"message": {"k": hostile(4000)}}),
        ("GET", f"/charts?window={q(64)}", None),
        ("GET", f"/charts/queues?queue={q(63)}&window={q(64)}", None),
        ("GET", f"/audit?queue={q(63)}&beforeId={q(20)}&limit={q(20)}", None),
        ("GET", f"/queues?database={q(63)}", None),
    ]


def test_the_health_of_a_queue_whose_table_was_dropped_is_a_clear_503(
    served: tuple[Database, httpx.Client],
) -> None:
    database, client = served
    with database.engine.begin() as connection:
        connection.execute(sa.text("DROP TABLE orders"))
    answer = client.get("/queues/orders/health")
    assert answer.status_code == 503, answer.text
    assert answer.json()["health"] == "Unknown"
    assert any("table" in reason for reason in answer.json()["reasons"]), answer.text
    listing = client.get("/queues/orders/messages")
    assert listing.status_code == 409 and "table" in listing.json()["error"], listing.text
    # Issue 44 (L5): routes that reach the queue without naming it in their path were a 500.
    for method, target, body in [
        ("GET", "/queues", None),
        ("POST", "/topics/orders.created/messages", {"message": {"Sku": "123"}}),
        ("GET", f"/jobs/{uuid.uuid4()}", None),
    ]:
        answer = client.request(method, target, json=body)
        assert answer.status_code == 409, (target, answer.text)
        assert "the table of queue 'orders' is missing" in answer.json()["error"], answer.text


def test_a_queues_spec_is_checked_again_only_when_another_process_changes_it(
    tmp_path: Path,
) -> None:
    """A spec can hold megabytes of schedules: reading a queue (every API request, the open
    health route) validates it once per change, and a change made elsewhere is never missed."""
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    with connect(url) as reader, connect(url) as writer:
        writer.apply(QueueResource.model_validate(FULL))
        first = reader.queue("orders").spec
        assert reader.queue("orders").spec is first
        writer.apply(QueueResource.model_validate(with_value(FULL, ("spec", "category"), "Ops")))
        assert reader.queue("orders").spec.category == "Ops"


def test_the_longest_predicate_in_a_url_is_read_however_the_request_arrives(
    served: tuple[Database, httpx.Client],
) -> None:
    """A 4,000-character predicate of four-byte characters is 48 KB of URL. The HTTP server read
    at most 16 KiB of a request head it had not yet received whole, and dropped the connection
    (a fuzzed request did this when the URL came in two reads): sent here in 4 KiB pieces."""
    _, client = served
    where = 'k == "' + "\U0001f600" * 3993 + '"'
    head = f"GET /queues/orders/messages?where={quote(where)} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    data = (head + "Connection: close\r\n\r\n").encode()
    assert len(data) > 48_000
    host, port = str(client.base_url.host), int(client.base_url.port or 80)
    with socket.create_connection((host, port), timeout=DEADLINE) as connection:
        for start in range(0, len(data), 4096):
            connection.sendall(data[start : start + 4096])
            time.sleep(0.001)  # separate reads on the server's side; not a wait for a result
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
