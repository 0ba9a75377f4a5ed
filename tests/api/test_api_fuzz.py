"""Schema-driven fuzzing of the HTTP API (schemathesis): no input ever gets a 5xx.

Requests are generated from the OpenAPI document, both valid ones and ones that break it, and
sent over real HTTP to the server on a seeded database of each engine. Besides "never a server
error", every refused request (4xx) and every read must leave every table exactly as it was.
Generation is derandomized and bounded, so a run is repeatable and takes seconds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import requests
import schemathesis
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from tablequeue import Database, Failure, NewMessage, Queue
from tests.support.api_server import serve_api
from tests.support.snapshot import snapshot

MakeQueue = Callable[..., Queue]

EXAMPLES_PER_ENGINE = 300
PREDICATES = ['Sku == "123"', "n >= 3", "Paid == true and Total > 100", "Missing == null"]
STATUSES = ["Pending", "OnHold", "Error", "Paused", "Cancelled"]


@pytest.fixture
def seeded(make_queue: MakeQueue) -> dict[str, list[Any]]:
    """Two queues with messages in most statuses, and their ids and tracking ids."""
    orders = make_queue("orders", category="Sales", keep_processed_for="forever", max_attempts=2)
    make_queue("audit-log", category="Ops", idempotent=True)
    orders.enqueue_many(
        [
            NewMessage(
                message={"n": n, "Sku": "123" if n % 2 else "9", "Paid": n > 3, "Total": n * 50},
                message_id=f"M-{n}" if n % 3 == 0 else None,
                priority=5 if n < 3 else 0,
            )
            for n in range(10)
        ]
    )
    batch = orders.lease("fuzzer", batch_size=3)
    orders.fail("fuzzer", [Failure(batch.messages[0], "boom", permanent=True)])
    orders.enqueue({"n": 99}, status="OnHold", after=3600)
    messages = orders.messages()
    return {
        "names": ["orders", "audit-log"],
        "ids": [m.id for m in messages],
        "tracking_ids": [str(m.tracking_id) for m in messages],
    }


def closing_session() -> requests.Session:
    """One connection per request: after a 500, uvicorn drops the connection a pool would reuse."""
    session = requests.Session()
    session.headers["Connection"] = "close"
    return session


class Rows:
    """`test_bad_input.snapshot` with the reflection done once: the fuzzed API creates no tables."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.metadata = sa.MetaData()
        self.metadata.reflect(database.engine)

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        with self.database.engine.connect() as connection:
            return {
                name: sorted(map(tuple, connection.execute(sa.select(table))), key=repr)
                for name, table in self.metadata.tables.items()
            }


def steer(case: Any, data: st.DataObject, seeded: dict[str, list[Any]]) -> None:
    """Aim part of the generated requests at things that exist, so success paths get fuzzed too."""
    path = case.path_parameters or {}
    for key, known in (
        ("name", seeded["names"]),
        ("message_id", seeded["ids"]),
        ("tracking_id", seeded["tracking_ids"]),
    ):
        if key in path:
            path[key] = data.draw(st.sampled_from([*known, path[key]]), label=key)
    if isinstance(case.query, dict) and "where" in case.query:
        case.query["where"] = data.draw(st.sampled_from([*PREDICATES, case.query["where"]]))
    if isinstance(case.body, dict):
        if "where" in case.body:
            case.body["where"] = data.draw(st.sampled_from([*PREDICATES, case.body["where"]]))
        if isinstance(case.body.get("status"), str):
            case.body["status"] = data.draw(st.sampled_from([*STATUSES, case.body["status"]]))


def test_no_request_gets_a_server_error(database: Database, seeded: dict[str, list[Any]]) -> None:
    outcomes: Counter[str] = Counter()
    rows = Rows(database)
    assert rows.snapshot() == snapshot(database)
    state = {"rows": rows.snapshot()}  # the database after the last request
    with serve_api(database) as url, closing_session() as session:
        schema = schemathesis.openapi.from_url(url + "/openapi.json")
        cases = st.one_of(
            schema.as_strategy(GenerationMode.POSITIVE),
            schema.as_strategy(GenerationMode.NEGATIVE),
        )

        @settings(
            max_examples=EXAMPLES_PER_ENGINE,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=cases, data=st.data())
        def run(case: Any, data: st.DataObject) -> None:
            steer(case, data, seeded)
            before = state["rows"]
            response = case.call(session=session, timeout=30)
            state["rows"] = after = rows.snapshot()
            where = f"{case.method} {case.formatted_path}"
            outcomes[f"{response.status_code // 100}xx"] += 1
            case.validate_response(response, checks=[not_a_server_error])
            assert response.status_code < 500, f"{where}: {response.text[:500]}"
            if 400 <= response.status_code < 500:
                assert response.json().get("error") or response.json().get("detail")
                assert after == before, f"{where} was refused but changed rows"
            elif case.method == "GET":
                assert after == before, f"{where} is a read but changed rows"

        run()
    assert outcomes["5xx"] == 0
    assert outcomes["2xx"] >= EXAMPLES_PER_ENGINE // 10, (
        f"too few successes to be useful: {outcomes}"
    )


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


BIG = str(10**30)
FOUND = [
    # Each of these got a 500 on some engine, or was stored and then broke every read of it.
    ("POST", "/queues/orders", '{"message": {}, "after": 1.7976931348623157e308}'),
    ("POST", "/queues/orders", '{"message": {}, "after": 1e12}'),
    ("POST", "/queues/orders", '{"message": {}, "expiresAfter": 1e308}'),
    ("POST", "/queues/orders", '{"message": {}, "at": "9999-12-31T23:59:59-15:00"}'),
    ("POST", "/queues/orders", '{"message": {}, "expiresAt": "0001-01-01T00:00:00+15:00"}'),
    ("POST", "/queues/orders", '{"message": {"a": "x\\u0000y"}}'),
    ("POST", "/queues/orders", '{"message": {"\\u0000": 1}}'),
    ("POST", "/queues/orders", '{"message": {}, "messageId": "a\\u0000b"}'),
    ("POST", "/queues/orders", '{"message": {}, "headers": {"k": "\\u0000"}}'),
    ("POST", "/queues/orders", '{"message": "\\ud800"}'),
    ("POST", "/queues/orders", f'{{"message": {nested(300)}}}'),
    ("PATCH", "/queues/orders/messages/1", '{"message": {"a": "\\u0000"}}'),
    ("PATCH", "/queues/orders/messages/1", '{"message": ["\\udfff"]}'),
    ("PATCH", "/queues/orders/messages/1", '{"message": {"a": NaN}}'),
    ("POST", "/queues/orders", '{"message": {}, "headers": {"k": ["\\ud800"]}}'),
    ("PATCH", "/queues/orders/messages/1", f'{{"message": {nested(300)}}}'),
    ("POST", "/queues/orders/status", f'{{"status": "OnHold", "ids": [{BIG}]}}'),
    ("GET", "/queues/orders/messages?messageId=%00", None),
    ("GET", f"/queues/orders/messages/{BIG}", None),
    ("PATCH", f"/queues/orders/messages/{BIG}", '{"status": "OnHold"}'),
    ("DELETE", f"/queues/orders/messages/-{BIG}", None),
    ("GET", "/queues/orders/messages?cursor=djE6YXNjOjEwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAw", None),
]


def test_what_the_fuzzer_found_stays_fixed(
    database: Database, seeded: dict[str, list[Any]]
) -> None:
    """No 5xx; a refusal changes nothing; whatever was accepted can still be read back."""
    problems: list[str] = []
    with serve_api(database) as url, closing_session() as session:
        for method, path, body in FOUND:
            request = f"{method} {path} {(body or '')[:60]}"
            before = snapshot(database)
            headers = {"content-type": "application/json"} if body is not None else {}
            response = session.request(method, url + path, data=body, headers=headers, timeout=30)
            if response.status_code >= 500:
                problems.append(f"{request}: {response.status_code}")
            elif response.status_code >= 400 and snapshot(database) != before:
                problems.append(f"{request}: refused with {response.status_code} but changed rows")
            for queue in seeded["names"]:
                listing = session.get(f"{url}/queues/{queue}/messages?limit=1000", timeout=30)
                if listing.status_code != 200:
                    problems.append(f"after {request}: listing {queue} gets {listing.status_code}")
                    continue
                for item in listing.json()["items"]:
                    one = session.get(f"{url}/queues/{queue}/messages/{item['id']}", timeout=30)
                    if one.status_code != 200:
                        problems.append(
                            f"after {request}: message {item['id']} gets {one.status_code}"
                        )
    assert not problems, "\n".join(problems)
