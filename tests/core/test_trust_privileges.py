"""Least privilege on PostgreSQL (docs/guarantees.md): the grants each component needs, proven by
running it as a role that has only those. The operator (and `queue apply`) owns the tables; the
worker and an API admin need row rights on the queue table and read rights on the registry; an
API reader only reads."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import psycopg
import pytest
import sqlalchemy as sa

from tablequeue import Database, connect
from tablequeue.models import Completion
from tablequeue.rollup import MinuteCounts, chart_series, minute_of, prune, write_minutes
from tablequeue.spec import QueueResource
from tablequeue.storage.workers import Heartbeat

GRANTS = {
    "tq_operator": ["GRANT CREATE ON SCHEMA public TO tq_operator"],
    "tq_worker": [
        "GRANT SELECT ON tablequeue_queues TO tq_worker",
        "GRANT SELECT, UPDATE (theoretical_arrival, updated_at) ON tablequeue_rate_limits"
        " TO tq_worker",
        "GRANT SELECT, UPDATE ON tablequeue_schedules TO tq_worker",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON orders TO tq_worker",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON tablequeue_workers TO tq_worker",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON tablequeue_rollup TO tq_worker",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON tablequeue_results, tablequeue_attempts,"
        " tablequeue_housekeeping TO tq_worker",
    ],
    "tq_api_admin": [
        "GRANT SELECT, UPDATE (default_status, paused_at, updated_at) ON tablequeue_queues"
        " TO tq_api_admin",
        "GRANT SELECT ON tablequeue_rate_limits TO tq_api_admin",
        "GRANT SELECT, UPDATE ON tablequeue_schedules TO tq_api_admin",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON orders TO tq_api_admin",
        "GRANT SELECT ON tablequeue_workers TO tq_api_admin",
        "GRANT SELECT ON tablequeue_rollup TO tq_api_admin",
        "GRANT SELECT ON tablequeue_results, tablequeue_attempts TO tq_api_admin",
    ],
    "tq_reader": [
        "GRANT SELECT ON tablequeue_queues, tablequeue_rate_limits TO tq_reader",
        "GRANT SELECT ON tablequeue_schedules TO tq_reader",
        "GRANT SELECT ON orders TO tq_reader",
        "GRANT SELECT ON tablequeue_workers TO tq_reader",
        "GRANT SELECT ON tablequeue_rollup TO tq_reader",
        "GRANT SELECT ON tablequeue_results, tablequeue_attempts TO tq_reader",
    ],
}
"""What docs/guarantees.md tells a DBA to grant (the operator's: as the owner of the tables)."""


@pytest.fixture
def as_role(postgres_url: str) -> Iterator[dict[str, Database]]:
    admin = postgres_url
    with psycopg.connect(admin, autocommit=True) as connection:
        for role in GRANTS:
            connection.execute(f"DROP ROLE IF EXISTS {role}")  # names are fixed above
            connection.execute(f"CREATE ROLE {role} LOGIN")
        connection.execute(GRANTS["tq_operator"][0])
    databases = {role: connect(admin.replace("postgres@", f"{role}@", 1)) for role in GRANTS}
    yield databases
    for database in databases.values():
        database.close()
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(
            "DROP TABLE IF EXISTS orders, tablequeue_queues, tablequeue_rollup, tablequeue_workers,"
            " tablequeue_rate_limits"
        )
        for role in GRANTS:
            connection.execute(f"DROP OWNED BY {role}")
            connection.execute(f"DROP ROLE {role}")


def test_each_component_works_with_only_its_grants(
    postgres_url: str, as_role: dict[str, Database]
) -> None:
    operator = as_role["tq_operator"]
    schedule = {"name": "nightly", "cron": "0 2 * * *", "message": {"n": 0}}
    limited = {"messagesPerSecond": 100}
    resource = QueueResource.from_name("orders", schedules=[schedule], rate_limit=limited)
    assert operator.apply(resource) == "created"
    with operator.transaction() as connection:
        for statement in [g for role in GRANTS if role != "tq_operator" for g in GRANTS[role]]:
            connection.exec_driver_sql(statement)

    worker = as_role["tq_worker"].queue("orders")
    done = worker.enqueue({"n": 1})
    [message] = worker.lease("w1", 10).messages
    worker.complete("w1", [Completion(message)])  # its result is kept
    worker.sweep()
    assert worker.purge_retained("w1") is not None
    worker.vacuum()  # not the owner: PostgreSQL skips it with a warning, nothing fails
    as_role["tq_worker"].heartbeat(Heartbeat("w1", "orders", "pod-1", 1, "0.1.0", 5.0))
    as_role["tq_worker"].heartbeat(Heartbeat("w1", "orders", "pod-1", 1, "0.1.0", 5.0, 0, 1))
    assert as_role["tq_worker"].prune_workers() == 0
    worker.set_next_tick("nightly")
    [fired] = worker.fire_schedules()
    [scheduled] = worker.lease("w1", 10).messages
    assert fired.message is not None and scheduled.id == fired.message.id
    worker.complete("w1", [Completion(scheduled)])
    counts = MinuteCounts(processed=1)
    write_minutes(
        as_role["tq_worker"], "orders", worker.table, {minute_of(datetime.now(UTC)): counts}
    )
    prune(as_role["tq_worker"])

    admin = as_role["tq_api_admin"]
    admin.queue("orders").enqueue({"n": 2})
    admin.queue("orders").set_status("OnHold", from_status="Pending")
    admin.set_default_status("orders", "Paused")
    assert admin.queue("orders").run_schedule("nightly") is not None  # Paused, the default
    assert admin.pause("orders").paused and not admin.resume("orders").paused

    assert sum(chart_series(admin, "1h", ["orders"])["queues"][0]["processed"]) == 1
    reader = as_role["tq_reader"].queue("orders")
    assert [view.fired for view in reader.schedules()] == [2]
    assert sum(chart_series(as_role["tq_reader"], "24h")["total"]["processed"]) == 1
    assert reader.stats().counts == {"OnHold": 1, "Paused": 1}  # processed ones are deleted
    assert as_role["tq_reader"].find_job(str(done.tracking_id)).source == "results"
    assert reader.attempts(reader.messages(status="OnHold")[0]) == []
    assert as_role["tq_reader"].flow_states()["orders"].limited
    assert [m.message for m in reader.messages(status="OnHold")] == [{"n": 2}]
    [seen] = as_role["tq_reader"].workers("orders")
    assert (seen.worker_id, seen.processed) == ("w1", 1)
    assert as_role["tq_worker"].forget_worker("w1")
    with pytest.raises(sa.exc.ProgrammingError, match="permission denied"):
        reader.enqueue({"n": 3})
    with pytest.raises(sa.exc.ProgrammingError, match="permission denied"):
        as_role["tq_worker"].apply(QueueResource.from_name("other"))
