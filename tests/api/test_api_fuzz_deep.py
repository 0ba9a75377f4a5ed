"""Deep fuzzing of the HTTP API with tokens on: thousands of generated requests per engine, each
sent as the admin, as a reader or with no token. No request gets a 5xx; a refused request, a
read, and anything a reader or an anonymous client sends leave every table exactly as it was
(a snapshot after every request). The count per engine is `TABLEQUEUE_FUZZ_REQUESTS`: the
default, 2,000, keeps the file within about four minutes over all engines (13 to 30 ms a
request, quiet or loaded machine); 10,000 per engine takes 9 to 19 minutes.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from tablequeue import Database
from tablequeue.api.auth import Auth
from tests.api.test_api_fuzz import Rows, closing_session, seeded, steer
from tests.support.api_server import serve_api
from tests.support.snapshot import snapshot

__all__ = ["seeded"]  # a fixture, for this module
pytestmark = pytest.mark.slow

REQUESTS_PER_ENGINE = int(os.environ.get("TABLEQUEUE_FUZZ_REQUESTS", "2000"))
ADMIN, READER = "deep-fuzz-admin", "deep-fuzz-reader"
TOKENS = {"admin": ADMIN, "reader": READER, "none": None}


def test_thousands_of_requests_with_tokens_get_no_server_error_and_change_nothing_unallowed(
    database: Database, seeded: dict[str, list[Any]]
) -> None:
    outcomes: Counter[str] = Counter()
    rows = Rows(database)
    assert rows.snapshot() == snapshot(database)
    state = {"rows": rows.snapshot()}  # the database after the last request
    started = time.monotonic()
    auth = Auth(admin_token=ADMIN, read_token=READER)
    with serve_api(database, auth) as url, closing_session() as session:
        schema = schemathesis.openapi.from_url(url + "/openapi.json")
        cases = st.one_of(
            schema.as_strategy(GenerationMode.POSITIVE),
            schema.as_strategy(GenerationMode.NEGATIVE),
        )

        @settings(
            max_examples=REQUESTS_PER_ENGINE,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=cases, data=st.data(), who=st.sampled_from(list(TOKENS)))
        def run(case: Any, data: st.DataObject, who: str) -> None:
            steer(case, data, seeded)
            token = TOKENS[who]
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            before = state["rows"]
            response = case.call(session=session, headers=headers, timeout=30)
            state["rows"] = after = rows.snapshot()
            where = f"{who}: {case.method} {case.formatted_path}"
            outcomes[f"{who} {response.status_code // 100}xx"] += 1
            case.validate_response(response, checks=[not_a_server_error])
            assert response.status_code < 500, f"{where}: {response.text[:500]}"
            if 400 <= response.status_code < 500:
                assert after == before, f"{where} was refused but changed rows"
            if who != "admin" or case.method == "GET":
                assert after == before, f"{where} may not change anything but changed rows"

        run()
    elapsed = time.monotonic() - started
    sent = sum(outcomes.values())
    print(
        f"\n{sent} requests in {elapsed:.1f} s ({elapsed / sent * 1000:.1f} ms each):"
        f" {dict(sorted(outcomes.items()))}"
    )
    assert not [k for k in outcomes if k.endswith("5xx")]
    for who in TOKENS:
        assert sum(n for k, n in outcomes.items() if k.startswith(who)) >= sent // 10, outcomes
    assert outcomes["admin 2xx"] >= sent // 30, f"too few successes to be useful: {outcomes}"
    assert outcomes["reader 2xx"] >= 1, outcomes
