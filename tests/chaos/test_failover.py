"""A PostgreSQL failover under load: a primary with a synchronous streaming replica, workers
draining through a proxy (the role a service or a pooler plays), the primary killed with
SIGKILL, the replica promoted, the proxy pointed at it. What the new primary kept, tablequeue
kept: nothing lost; a message runs again only if its handler was running when the primary died
(its completion never reached a database), under `onLeaseExpired: Retry`."""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from tablequeue import NewMessage, connect
from tablequeue.errors import DatabaseUnavailable
from tablequeue.spec import QueueResource
from tests.support.postgres_server import PostgresServer
from tests.support.stored import stored_id
from tests.support.waiting import wait_until
from tests.support.worker_handlers import read_records
from tests.worker.helpers import FAST_POLL, SYNC, StartWorker

from .proxy import cuttable_proxy

MESSAGES = 600
LEASE_SECONDS = 5  # an in-flight message's lease outlives the failover, then it is run again
LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"  # Debian's `faketime`


@contextlib.contextmanager
def primary_and_replica(
    primary_clock_ahead: str | None = None,
) -> Iterator[tuple[PostgresServer, PostgresServer]]:
    """A primary and a streaming replica the primary waits for on every commit; the primary's
    clock runs ahead by `primary_clock_ahead` (libfaketime, e.g. `+10m`) if given."""
    folders = [Path(tempfile.mkdtemp(prefix=f"tablequeue-{role}-")) for role in ("pri", "rep")]
    primary, replica = (PostgresServer(folder) for folder in folders)
    if primary_clock_ahead:
        primary.environment = {"LD_PRELOAD": LIBFAKETIME, "FAKETIME": primary_clock_ahead}
    try:
        primary.init()
        primary.start("synchronous_commit=on", "synchronous_standby_names='*'")
        replica.base.chmod(0o700)
        if replica.as_postgres:
            shutil.chown(replica.base, "postgres", "postgres")
        replica._run(  # a copy of the primary that follows it (standby.signal + conninfo)
            "pg_basebackup",
            f"--dbname=host=127.0.0.1 port={primary.port} user=postgres application_name=rep",
            "-D",
            str(replica.data),
            "--write-recovery-conf",
            "--checkpoint=fast",
        )
        replica.start("hot_standby=on")
        yield primary, replica
    finally:
        for server in (replica, primary):
            with contextlib.suppress(Exception):
                server.stop("immediate")
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def _kill(server: PostgresServer) -> None:
    """SIGKILL the postmaster, as a crashed machine would leave it (no shutdown checkpoint)."""
    pid = int((server.data / "postmaster.pid").read_text().splitlines()[0])
    subprocess.run(["kill", "-9", str(pid)], check=True)


@pytest.mark.timeout(300)
def test_a_failover_to_a_synchronous_replica_loses_nothing(
    start_worker: StartWorker, records: Path
) -> None:
    with primary_and_replica() as (primary, replica), cuttable_proxy(primary.port) as proxy:
        url = f"postgresql://postgres@127.0.0.1:{proxy.port}/postgres"
        database = connect(url)
        database.apply(
            QueueResource.from_name(
                "orders",
                lease_seconds=LEASE_SECONDS,
                on_lease_expired="Retry",
                max_attempts=5,
                keep_processed_for="1h",
            )
        )
        queue = database.queue("orders")
        options = ("--batch-size", "10", "--concurrency", "4", *FAST_POLL)
        workers = [start_worker("orders", url, SYNC, *options) for _ in range(2)]
        bodies = [NewMessage(message={"n": n, "sleep": 0.02}) for n in range(MESSAGES)]
        ids = [stored_id(e) for e in queue.enqueue_many(bodies)]
        wait_until(lambda: len(read_records(records)) >= 100, timeout=60)
        with psycopg.connect(primary.url) as direct:
            states = direct.execute("SELECT sync_state FROM pg_stat_replication").fetchall()
        assert states == [("sync",)]  # every acknowledged commit is on the replica too

        _kill(primary)
        proxy.cut()
        started_before = {m for kind, m, _, _ in read_records(records) if kind == "start"}
        replica._run("pg_ctl", "-D", str(replica.data), "-w", "-t", "60", "promote")
        proxy.restore(replica.port)

        def all_processed() -> bool:
            # The test's own pooled connections went to the dead primary: the first use of one
            # fails as it would for any client (DatabaseUnavailable), the next one reconnects.
            try:
                return queue.count(status="Processed") == MESSAGES
            except DatabaseUnavailable:
                return False

        wait_until(all_processed, timeout=180, interval=0.5)
        starts = Counter(m for kind, m, _, _ in read_records(records) if kind == "start")
        statuses = {m.id: m.status for m in queue.messages(limit=10_000)}
        lost = [i for i in ids if statuses.get(i) != "Processed"]
        duplicated = sorted(i for i, n in starts.items() if n > 1)
        print(
            f"\nchaos failover: {MESSAGES} messages, {len(started_before)} started before the "
            f"primary died, lost {len(lost)}, run twice {len(duplicated)}"
        )
        assert lost == []
        assert set(duplicated) <= started_before  # only what ran when the primary died
        for worker in workers:
            worker.signal(signal.SIGTERM)
            assert worker.wait_exit() == 0
        database.close()


@pytest.mark.skipif(not Path(LIBFAKETIME).exists(), reason="scripts/setup installs faketime")
@pytest.mark.timeout(120)
def test_a_failover_to_a_server_with_another_clock_moves_lease_expiry_by_the_difference() -> None:
    """Leases are judged by the database's clock: leased on a primary whose clock is 10 minutes
    ahead, a 30 s lease still has about 10 min 30 s to run on a replica with the true time."""
    with primary_and_replica(primary_clock_ahead="+10m") as (primary, replica):
        database = connect(primary.url)
        with database.transaction() as connection:
            primary_now = connection.exec_driver_sql("SELECT now()").scalar()
            assert primary_now is not None
            ahead = primary_now - datetime.now(UTC)
        database.apply(QueueResource.from_name("orders", lease_seconds=30))
        database.queue("orders").enqueue({"n": 1})
        [leased] = database.queue("orders").lease("w1", 1).messages
        database.close()

        _kill(primary)
        replica._run("pg_ctl", "-D", str(replica.data), "-w", "-t", "60", "promote")
        replica.wait_ready()
        promoted = connect(replica.url)
        queue = promoted.queue("orders")
        with promoted.transaction() as connection:
            now = connection.exec_driver_sql("SELECT now()").scalar()
        assert queue.sweep().abandoned == 0  # not expired: the new primary's clock is behind
        [message] = queue.messages()
        assert message.lease_expires_at is not None and now is not None
        left = (message.lease_expires_at - now).total_seconds()
        print(
            f"\nprimary clock ahead by {ahead.total_seconds():.0f} s; "
            f"lease left on the promoted replica: {left:.0f} s"
        )
        assert message.status == "Leased" and message.id == leased.id
        assert 9 * 60 + 30 <= left <= 10 * 60 + 30  # 30 s lease + 10 min of clock difference
        promoted.close()
