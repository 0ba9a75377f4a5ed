"""A network that silently drops every packet between tablequeue and PostgreSQL (no reset, no
refusal: a firewall rule that drops on the loopback port of a server of the test's own). The
server cannot time out what it never receives, so the client must notice by itself: TCP
keepalives and `tcp_user_timeout`, which the PostgreSQL dialect sets on every connection (a
minute by default; shortened here through the URL, whose parameters win)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tablequeue import NewMessage, connect
from tablequeue.errors import DatabaseUnavailable
from tablequeue.spec import QueueResource
from tests.support.postgres_server import PostgresServer, postgres_server
from tests.support.stored import stored_id
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_records
from tests.worker.helpers import FAST_POLL, SYNC, StartWorker

MESSAGES = 300
SHORT_TCP_BOUNDS = (
    "tcp_user_timeout=3000&keepalives_idle=1&keepalives_interval=1&keepalives_count=3"
)

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("iptables") is None,
    reason="dropping packets needs root and iptables (scripts/setup installs iptables)",
)


@contextlib.contextmanager
def dropped(port: int) -> Iterator[None]:
    """Every TCP packet to or from `port` on this machine is dropped while inside."""
    rules = [["-p", "tcp", "--dport", str(port)], ["-p", "tcp", "--sport", str(port)]]
    comment = ["-m", "comment", "--comment", f"tablequeue-test-{os.getpid()}", "-j", "DROP"]
    added: list[list[str]] = []
    try:
        for rule in rules:
            subprocess.run(["iptables", "-I", "INPUT", *rule, *comment], check=True)
            added.append(rule)
        yield
    finally:
        for rule in added:
            subprocess.run(["iptables", "-D", "INPUT", *rule, *comment], check=True)


@pytest.fixture
def server() -> Iterator[PostgresServer]:
    """A server of this test's own: other tests' pooled connections never see the drops."""
    with postgres_server() as started:
        yield started


def _url(server: PostgresServer) -> str:
    return f"{server.create_database('dropped')}?{SHORT_TCP_BOUNDS}"


@pytest.mark.timeout(120)  # without the TCP bounds, the statement below waits for ever
def test_a_statement_on_a_dropping_network_fails_instead_of_waiting_for_ever(
    server: PostgresServer,
) -> None:
    database = connect(_url(server))
    database.ping()  # a pooled connection, established before the network goes silent
    with dropped(server.port):
        started = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match=r"lost connection|cannot connect"):
            database.ping()
        print(f"\ndropped packets noticed after {time.monotonic() - started:.1f} s")
    database.ping()  # a new connection once the network carries packets again
    database.close()


@pytest.mark.timeout(300)
def test_workers_ride_out_a_dropping_network_without_losing_or_repeating_a_message(
    server: PostgresServer, start_worker: StartWorker, records: Path
) -> None:
    url = _url(server)
    database = connect(url)
    database.apply(QueueResource.from_name("orders", lease_seconds=120, keep_processed_for="1h"))
    queue = database.queue("orders")
    options = ("--batch-size", "10", "--concurrency", "4", *FAST_POLL)
    worker = start_worker("orders", url, SYNC, *options)
    ids = [
        stored_id(e)
        for e in queue.enqueue_many(
            [NewMessage(message={"n": n, "sleep": 0.02}) for n in range(MESSAGES)]
        )
    ]
    wait_until(lambda: len(read_records(records)) >= 40, timeout=60)
    before = queue.count(status="Processed")
    with dropped(server.port):
        wait_until(
            lambda: "database unavailable" in worker.log_path.read_text(errors="replace"),
            timeout=60,
        )
    assert before < MESSAGES  # the network went silent mid-run
    wait_until(lambda: queue.count(status="Processed") == MESSAGES, timeout=120, interval=0.25)
    starts = Counter(m for kind, m, _, _ in read_records(records) if kind == "start")
    statuses = {m.id: m.status for m in queue.messages(limit=10_000)}
    lost = [i for i in ids if statuses.get(i) != "Processed"]
    duplicated = [i for i, n in starts.items() if n > 1]
    print(f"\nchaos dropped packets: {MESSAGES} messages, lost {len(lost)}, ", end="")
    print(f"duplicated {len(duplicated)}")
    assert lost == [] and duplicated == []
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit() == 0
    database.close()
