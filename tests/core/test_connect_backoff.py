"""`connect(url, connect_backoff_seconds=...)`: after a failed connect every connect fails at once
(no new connection tried) until the back-off has passed; then one tries again while the others
still fail at once; a success ends it. On a server that never answers, and on a real PostgreSQL
server stopped and started again."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tablequeue import connect
from tablequeue.errors import DatabaseUnavailable
from tablequeue.storage.timeouts import DatabaseTimeouts
from tests.support.postgres_server import PostgresServer, postgres_server
from tests.support.rogue_servers import SilentServer
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow
BOUNDS = DatabaseTimeouts(connect_seconds=2.0)


def test_a_silent_server_is_tried_once_then_refused_at_once_then_once_again() -> None:
    with SilentServer() as silent:
        url = f"postgresql://ann@127.0.0.1:{silent.port}/db?password=pw"
        with connect(url, timeouts=BOUNDS, connect_backoff_seconds=3.0) as db:
            with pytest.raises(DatabaseUnavailable, match="cannot connect"):
                db.ping()
            assert silent.connections == 1
            for _ in range(5):
                with pytest.raises(DatabaseUnavailable, match="connects fail at once"):
                    db.ping()
            assert silent.connections == 1  # none of the five tried

            # Once the back-off has passed, one request tries again; meanwhile others do not.
            def backed_off() -> bool:
                try:
                    db.ping()
                except DatabaseUnavailable as refused:
                    return "connects fail at once" not in str(refused)
                return False

            retrying = threading.Thread(target=lambda: wait_until(backed_off, timeout=30))
            retrying.start()
            wait_until(lambda: silent.connections == 2, timeout=30)
            with pytest.raises(DatabaseUnavailable, match="connects fail at once"):
                db.ping()
            retrying.join(timeout=30)
            assert silent.connections == 2


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


def test_a_server_back_is_used_again_after_the_back_off(own_postgres: PostgresServer) -> None:
    with connect(own_postgres.url, timeouts=BOUNDS, connect_backoff_seconds=1.0) as db:
        db.ping()
        own_postgres.stop("immediate")
        with pytest.raises(DatabaseUnavailable):
            db.ping()  # the pooled connection is lost
        with pytest.raises(DatabaseUnavailable):
            db.ping()
        own_postgres.start()

        def answers() -> bool:
            try:
                db.ping()
            except DatabaseUnavailable:
                return False
            return True

        wait_until(answers, timeout=30)
        db.ping()  # and again, with no back-off left
