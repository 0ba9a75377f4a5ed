"""Schema-driven fuzzing of the HTTP API (schemathesis): no input ever gets a 5xx.

Requests are generated from the OpenAPI document, both valid ones and ones that break it, and
sent over real HTTP to the server on a seeded database of each engine. Besides "never a server
error", every refused request (4xx) and every read must leave every table exactly as it was.
Generation is derandomized and bounded, so a run is repeatable and takes seconds.
"""

from __future__ import annotations

from typing import Any

from tablequeue import Database
from tests.support.api_server import serve_api
from tests.support.fuzzing import closing_session, fuzz_api
from tests.support.snapshot import snapshot

EXAMPLES_PER_ENGINE = 300


def test_no_request_gets_a_server_error(database: Database, seeded: dict[str, list[Any]]) -> None:
    outcomes = fuzz_api(database, seeded, EXAMPLES_PER_ENGINE)
    assert outcomes["open 5xx"] == 0
    assert outcomes["open 2xx"] >= EXAMPLES_PER_ENGINE // 10, (
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
