"""A first apply that fails after creating the queue's table leaves no table behind: on MariaDB,
whose DDL commits at once, the rollback alone kept it (empty, named by no registry row), and the
next apply took it for a kept table of a deleted queue. The failure is the database's own: a
trigger refuses the registry row."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tablequeue import connect
from tablequeue.spec import QueueResource

REFUSING_TRIGGER = {
    "mariadb": [
        "CREATE TRIGGER refuse_queues BEFORE INSERT ON tablequeue_queues FOR EACH ROW"
        " SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by the test'"
    ],
    "postgresql": [
        "CREATE FUNCTION refuse_queues() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$",
        "CREATE TRIGGER refuse_queues BEFORE INSERT ON tablequeue_queues"
        " FOR EACH ROW EXECUTE FUNCTION refuse_queues()",
    ],
    "sqlite": [
        "CREATE TRIGGER refuse_queues BEFORE INSERT ON tablequeue_queues"
        " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
    ],
}
"""A trigger that refuses every new registry row, in each engine's words."""


@pytest.mark.parametrize("url_fixture", ["mariadb_url", "postgres_url", "sqlite_url"])
def test_a_failed_first_apply_leaves_no_table(
    url_fixture: str, request: pytest.FixtureRequest
) -> None:
    url = str(request.getfixturevalue(url_fixture))
    resource = QueueResource.from_name("orders")
    table_name = resource.spec.table_for("orders")
    with connect(url) as database:
        database.apply(QueueResource.from_name("mail"))  # the registry table is there
        engine = database.engine  # Database is its Storage
        with engine.begin() as connection:
            for statement in REFUSING_TRIGGER[engine.dialect.name]:
                connection.exec_driver_sql(statement)
        with pytest.raises(sa.exc.DBAPIError, match="refused by the test"):
            database.apply(resource)
        assert not sa.inspect(engine).has_table(table_name)
        assert [row["name"] for row in database.queues()] == ["mail"]

        with engine.begin() as connection:
            drop = "DROP TRIGGER refuse_queues"
            on_table = " ON tablequeue_queues" if engine.dialect.name == "postgresql" else ""
            connection.exec_driver_sql(drop + on_table)
        assert database.apply(resource) == "created"
        queue = database.queue("orders")
        queue.enqueue({"n": 1})
        assert queue.count() == 1
