"""Deep fuzzing of the HTTP API with tokens on: 10,000 generated requests per engine, each sent
as the admin, as a reader or with no token. No request gets a 5xx; a refused request, a read, and
anything a reader or an anonymous client sends leave every table exactly as it was (a snapshot
after every request). The requests are generated once (derandomized, ~10 ms each) and replayed on
every engine (5 to 11 ms each), about 7 minutes for four engines on a loaded 2-core machine.
`TABLEQUEUE_FUZZ_REQUESTS` changes the count.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from tablequeue import Database
from tablequeue.api.auth import Auth
from tests.support.fuzzing import fuzz_api

pytestmark = pytest.mark.slow

REQUESTS_PER_ENGINE = int(os.environ.get("TABLEQUEUE_FUZZ_REQUESTS", "10000"))
AUTH = Auth(admin_token="deep-fuzz-admin", read_token="deep-fuzz-reader")


def test_thousands_of_requests_with_tokens_get_no_server_error_and_change_nothing_unallowed(
    database: Database, seeded: dict[str, list[Any]]
) -> None:
    started = time.monotonic()
    outcomes = fuzz_api(database, seeded, REQUESTS_PER_ENGINE, AUTH)
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
