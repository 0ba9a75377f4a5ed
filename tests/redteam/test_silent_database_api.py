"""Issue 44 (H3): one API serving two databases, one of which (`gone`) accepts connections and
never answers (each connect waits for the 10 s connect bound). 60 anonymous readiness requests
naming it at once held every thread of the API's pool: `/livez` took 18 s, a reader's queue list
of the default database 18 s, and some answers were 500s. Now `/livez` never waits for a thread,
`gone` holds at most its own slots, and every answer about it is a 503."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tablequeue import connect
from tablequeue.api.databases import REQUESTS_PER_DATABASE
from tablequeue.spec import QueueResource
from tests.support.api_server import api_process
from tests.support.rogue_servers import SilentServer
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow

READ = {"Authorization": "Bearer read-secret"}
TOKENS = {"TABLEQUEUE_API_ADMIN_TOKEN": "admin-secret", "TABLEQUEUE_API_READ_TOKEN": "read-secret"}
FLOOD = 60
PROMPT_SECONDS = 5.0
"""How long the probes and the other database's requests may take while `gone` is flooded: the
client gives up after it, and the test fails (they took 18 s)."""


def test_a_silent_database_stalls_neither_livez_nor_the_other_databases(
    postgres_url: str, tmp_path: Path
) -> None:
    with connect(postgres_url) as database:
        database.apply(QueueResource.from_name("orders"))
        database.queue("orders").enqueue({"n": 1})
    with SilentServer() as silent:
        gone = f"postgresql://ann@127.0.0.1:{silent.port}/db?password=pw"
        flags = ("--database", f"gone={gone}")
        with (
            api_process(postgres_url, tmp_path, TOKENS, arguments=flags) as api,
            httpx.Client(base_url=api.base, timeout=120) as flooding,
            httpx.Client(base_url=api.base, timeout=PROMPT_SECONDS) as prompt,
            ThreadPoolExecutor(FLOOD) as pool,
        ):
            answers = [
                pool.submit(flooding.get, "/readyz", params={"database": "gone"})
                for _ in range(FLOOD)
            ]
            wait_until(lambda: silent.connections >= REQUESTS_PER_DATABASE)
            for _ in range(3):
                assert prompt.get("/livez").status_code == 200
                listed = prompt.get("/queues", headers=READ)
                assert listed.status_code == 200, listed.text
                assert [queue["name"] for queue in listed.json()] == ["orders"]
                assert prompt.get("/readyz").status_code == 200
            statuses = [answer.result().status_code for answer in answers]
            assert set(statuses) == {503}, statuses
            assert silent.connections <= REQUESTS_PER_DATABASE + 1
            # Backing off: the next request about it is a 503 at once, not after a connect.
            again = prompt.get("/readyz", params={"database": "gone"})
            assert again.status_code == 503
            assert again.json()["error"] == "database unavailable"
