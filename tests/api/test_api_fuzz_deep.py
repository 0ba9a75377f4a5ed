"""Deep fuzzing of the HTTP API with tokens on: 10,000 generated requests, each sent as the
admin, as a reader or with no token. No request gets a 5xx; a refused request, a read, and
anything a reader or an anonymous client sends leave every table exactly as it was (a snapshot
after every request). The requests are generated once per test process (derandomized, ~10 ms
each; scripts/test's `--dist loadfile` keeps this module on one worker) and shared out: each
engine sends its share (2,500 different requests on four engines, 5 to 28 ms each). Every request
is checked on one engine, not on all: what differs between engines below the API is the
conformance suite's to prove; the fuzz looks for inputs the API does not survive.
`TABLEQUEUE_FUZZ_REQUESTS` changes the count.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from tablequeue import Database
from tablequeue.api.auth import Auth
from tests.conftest import engines_here
from tests.support.fuzzing import fuzz_api

pytestmark = pytest.mark.slow

REQUESTS = int(os.environ.get("TABLEQUEUE_FUZZ_REQUESTS", "10000"))
AUTH = Auth(admin_token="deep-fuzz-admin", read_token="deep-fuzz-reader")


def test_thousands_of_requests_with_tokens_get_no_server_error_and_change_nothing_unallowed(
    database: Database, seeded: dict[str, list[Any]], request: pytest.FixtureRequest
) -> None:
    engines = engines_here()
    share = (engines.index(request.node.callspec.params["db_url"]), len(engines))
    started = time.monotonic()
    outcomes = fuzz_api(database, seeded, REQUESTS, AUTH, share=share)
    elapsed = time.monotonic() - started
    sent = sum(outcomes.values())
    print(
        f"\n{sent} requests in {elapsed:.1f} s ({elapsed / sent * 1000:.1f} ms each):"
        f" {dict(sorted(outcomes.items()))}"
    )
    assert not [k for k in outcomes if k.endswith("5xx")]
    for who in ("admin", "reader", "none"):
        assert sum(n for k, n in outcomes.items() if k.startswith(who)) >= sent // 10, outcomes
    assert outcomes["admin 2xx"] >= sent // 30, f"too few successes to be useful: {outcomes}"
    assert outcomes["reader 2xx"] >= 1, outcomes
