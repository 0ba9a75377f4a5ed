"""Least privilege on PostgreSQL and MariaDB (docs/guarantees.md): the grants each component
needs, proven by running it as a role that has only those. The operator (and `queue apply`)
makes the tables (on PostgreSQL it owns them); the worker and an API admin need row rights on
the queue table and the shared tables they write, read rights on the registry; a reader reads."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import psycopg
import pytest
import sqlalchemy as sa

from tablequeue import Actor, Database, acting_as, connect
from tablequeue.models import Completion, Heartbeat
from tablequeue.rollup import MinuteCounts, chart_series, minute_of, prune, write_minutes
from tablequeue.spec import QueueResource
from tests.support.mariadb_server import USER, MariaDbServer

ROW_RIGHTS = "SELECT, INSERT, UPDATE, DELETE"
GRANTS: dict[str, list[tuple[str, list[str]]]] = {
    "tq_worker": [
        ("SELECT", ["tablequeue_queues"]),
        ("SELECT, UPDATE (theoretical_arrival, updated_at)", ["tablequeue_rate_limits"]),
        ("SELECT, UPDATE", ["tablequeue_schedules"]),
        (ROW_RIGHTS, ["orders", "tablequeue_workers", "tablequeue_rollup"]),
        (ROW_RIGHTS, ["tablequeue_results", "tablequeue_attempts", "tablequeue_housekeeping"]),
        ("SELECT, DELETE", ["tablequeue_audit"]),
    ],
    "tq_api_admin": [
        ("SELECT, UPDATE (default_status, paused_at, updated_at)", ["tablequeue_queues"]),
        ("SELECT", ["tablequeue_rate_limits", "tablequeue_workers", "tablequeue_rollup"]),
        ("SELECT, UPDATE", ["tablequeue_schedules"]),
        (ROW_RIGHTS, ["orders"]),
        ("SELECT", ["tablequeue_results", "tablequeue_attempts"]),
        ("SELECT, INSERT", ["tablequeue_audit"]),
    ],
    "tq_reader": [
        ("SELECT", ["tablequeue_queues", "tablequeue_rate_limits", "tablequeue_schedules"]),
        ("SELECT", ["orders", "tablequeue_workers", "tablequeue_rollup"]),
        ("SELECT", ["tablequeue_results", "tablequeue_attempts", "tablequeue_audit"]),
    ],
}
"""What docs/guarantees.md tells a DBA to grant, besides the operator's (below)."""
DENIED = r"permission denied|command denied"
REFUSED = (sa.exc.ProgrammingError, sa.exc.OperationalError)  # PostgreSQL's, MariaDB's
OPERATOR = "tq_operator"
MARIADB_OPERATOR_RIGHTS = "SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, DROP"
"""On MariaDB, on the database (no table owners there); on PostgreSQL `CREATE` on the schema
makes the operator the owner of the tables it creates."""
ROLES = [OPERATOR, *GRANTS]


@dataclass
class Roles:
    """A Database per role, and how to give the roles their rights once the tables exist."""

    databases: dict[str, Database]
    grant: Callable[[], None]

    def __getitem__(self, role: str) -> Database:
        return self.databases[role]


def _postgresql(postgres_url: str) -> Iterator[Roles]:
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        for role in ROLES:
            connection.execute(f"DROP ROLE IF EXISTS {role}")  # names are fixed above
            connection.execute(f"CREATE ROLE {role} LOGIN")
        connection.execute(f"GRANT CREATE ON SCHEMA public TO {OPERATOR}")
    databases = {role: connect(postgres_url.replace("postgres@", f"{role}@", 1)) for role in ROLES}

    def grant() -> None:  # as the owner of the tables: the operator
        with databases[OPERATOR].transaction() as connection:
            for role, rights in GRANTS.items():
                for privileges, tables in rights:
                    connection.exec_driver_sql(
                        f"GRANT {privileges} ON {', '.join(tables)} TO {role}"
                    )

    yield Roles(databases, grant)
    for database in databases.values():
        database.close()
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        for role in ROLES:
            connection.execute(f"DROP OWNED BY {role}")
            connection.execute(f"DROP ROLE {role}")


def _mariadb(server: MariaDbServer, url: str) -> Iterator[Roles]:
    name = sa.make_url(url).database

    def run(*statements: str) -> None:  # as root: granting needs the GRANT OPTION
        with server.root() as connection, connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)

    run(*(f"DROP USER IF EXISTS '{role}'@'%'" for role in ROLES))
    run(*(f"CREATE USER '{role}'@'%'" for role in ROLES))
    run(f"GRANT {MARIADB_OPERATOR_RIGHTS} ON `{name}`.* TO '{OPERATOR}'@'%'")
    databases = {role: connect(server.url(str(name)).replace(USER, role, 1)) for role in ROLES}

    def grant() -> None:
        run(
            *(
                f"GRANT {privileges} ON `{name}`.`{table}` TO '{role}'@'%'"
                for role, rights in GRANTS.items()
                for privileges, tables in rights
                for table in tables
            )
        )

    yield Roles(databases, grant)
    for database in databases.values():
        database.close()
    run(*(f"DROP USER '{role}'@'%'" for role in ROLES))


@pytest.fixture(params=["postgresql", "mariadb"])
def as_role(request: pytest.FixtureRequest) -> Iterator[Roles]:
    if request.param == "postgresql":
        yield from _postgresql(request.getfixturevalue("postgres_url"))
    else:
        server = request.getfixturevalue("mariadb")
        yield from _mariadb(server, request.getfixturevalue("mariadb_url"))


def _change_as_the_admin(admin: Database) -> None:
    admin.queue("orders").enqueue({"n": 2})
    with acting_as(Actor("admin token", "api")):  # each change is recorded in the audit trail
        admin.queue("orders").set_status("OnHold", from_status="Pending")
        admin.set_default_status("orders", "Paused")
        assert admin.queue("orders").run_schedule("nightly") is not None  # Paused, the default
        assert admin.pause("orders").paused and not admin.resume("orders").paused


def test_each_component_works_with_only_its_grants(as_role: Roles) -> None:
    operator = as_role["tq_operator"]
    schedule = {"name": "nightly", "cron": "0 2 * * *", "message": {"n": 0}}
    limited = {"messagesPerSecond": 100}
    resource = QueueResource.from_name("orders", schedules=[schedule], rate_limit=limited)
    assert operator.apply(resource) == "created"
    as_role.grant()

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
    _change_as_the_admin(admin)
    assert as_role["tq_worker"].purge_audit() == 0  # none older than 90 days

    charts = chart_series(admin, "1h", ["orders"])["queues"][0]  # reads the queue table too
    assert sum(n for n in charts["processed"] if n is not None) == 1
    reader = as_role["tq_reader"].queue("orders")
    assert [view.fired for view in reader.schedules()] == [2]
    total = chart_series(as_role["tq_reader"], "24h")["total"]
    assert sum(n for n in total["processed"] if n is not None) == 1
    assert reader.stats().counts == {"OnHold": 1, "Paused": 1}  # processed ones are deleted
    assert as_role["tq_reader"].find_job(str(done.tracking_id)).source == "results"
    assert reader.attempts(reader.messages(status="OnHold")[0]) == []
    assert len(as_role["tq_reader"].audit_entries()) == 5
    assert as_role["tq_reader"].flow_states()["orders"].rate_limited
    assert [m.message for m in reader.messages(status="OnHold")] == [{"n": 2}]
    [seen] = as_role["tq_reader"].workers("orders")
    assert (seen.worker_id, seen.processed) == ("w1", 1)
    assert as_role["tq_worker"].forget_worker("w1")
    with pytest.raises(REFUSED, match=DENIED):
        reader.enqueue({"n": 3})
    with pytest.raises(REFUSED, match=DENIED):
        as_role["tq_worker"].apply(QueueResource.from_name("other"))
