"""Bounded waits for the database (issue 17): a database that accepts connections and never
answers fails a connect within the bound, a statement running past the bound is cancelled,
and the CLI says so in one line."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from tablequeue import connect
from tablequeue.cli import main
from tablequeue.errors import DatabaseUnavailable, InvalidInput
from tablequeue.storage.timeouts import DatabaseTimeouts

SILENT_URLS = {
    "postgresql": "postgresql://ann@127.0.0.1:{port}/db?password=s3cretSilent",
    "mariadb": "mariadb://ann:s3cretSilent@127.0.0.1:{port}/db",
}


@pytest.fixture(params=list(SILENT_URLS))
def silent_database(request: pytest.FixtureRequest) -> Iterator[str]:
    """A loopback TCP port that accepts connections and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield SILENT_URLS[request.param].format(port=listener.getsockname()[1])


@pytest.mark.timeout(20)  # without a bound the CLI waits for ever
def test_a_silent_database_fails_the_cli_in_one_line_within_the_bound(silent_database: str) -> None:
    result = CliRunner().invoke(
        main,
        ["stats", "orders"],
        env={"TABLEQUEUE_DB": silent_database, "TABLEQUEUE_DB_CONNECT_TIMEOUT": "2"},
    )
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error: cannot connect to ")
    assert "ann@127.0.0.1:" in result.output or "ann:***@127.0.0.1:" in result.output
    assert re.search("time(out|d out)", result.output) and result.output.count("\n") == 1
    assert "s3cretSilent" not in result.output


def test_every_connection_carries_the_default_bounds(silent_database: str) -> None:
    database = connect(silent_database, timeouts=DatabaseTimeouts())
    args = database.dialect.connect_args(database.url, 10.0, 300.0)
    assert args["connect_timeout"] == 10
    if database.dialect.name == "postgresql":
        assert args["options"] == "-c TimeZone=UTC -c statement_timeout=300000"
        assert args["keepalives"] == 1 and args["tcp_user_timeout"] == 60_000
    else:
        assert args["init_command"] == "SET SESSION max_statement_time = 300"
        assert args["read_timeout"] == 10  # the greeting; then the statement bound + 10
    assert DatabaseTimeouts() == DatabaseTimeouts(connect_seconds=10.0, statement_seconds=300.0)
    database.close()


def test_a_statement_past_the_bound_is_cancelled(postgres_url: str) -> None:
    database = connect(postgres_url, timeouts=DatabaseTimeouts(statement_seconds=0.5))
    with (
        pytest.raises(DatabaseUnavailable, match="statement timeout"),
        database.transaction() as connection,
    ):
        connection.exec_driver_sql("SELECT pg_sleep(30)")
    database.ping()  # the connection is fine afterwards
    database.close()


@pytest.mark.parametrize("url_fixture", ["mariadb_url", "mariadb_odbc_url"])
def test_a_mariadb_statement_past_the_bound_is_cancelled(
    url_fixture: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(url_fixture)
    database = connect(url, timeouts=DatabaseTimeouts(statement_seconds=0.5))
    with (
        pytest.raises(DatabaseUnavailable, match="max_statement_time"),
        database.transaction() as connection,
    ):
        connection.exec_driver_sql("SELECT SLEEP(30)")
    database.ping()  # the connection is fine afterwards
    database.close()


def test_the_url_and_the_environment_set_the_bounds(postgres_url: str) -> None:
    database = connect(postgres_url + "?options=-c%20statement_timeout%3D400")
    with (
        pytest.raises(DatabaseUnavailable, match="statement timeout"),
        database.transaction() as connection,
    ):
        connection.exec_driver_sql("SELECT pg_sleep(30)")
    database.close()
    found = DatabaseTimeouts.from_environment(
        {"TABLEQUEUE_DB_CONNECT_TIMEOUT": "3", "TABLEQUEUE_DB_STATEMENT_TIMEOUT": "0"}
    )
    assert found == DatabaseTimeouts(connect_seconds=3, statement_seconds=None)
    assert DatabaseTimeouts.from_environment({}) == DatabaseTimeouts()
    with pytest.raises(InvalidInput, match="TABLEQUEUE_DB_CONNECT_TIMEOUT"):
        DatabaseTimeouts.from_environment({"TABLEQUEUE_DB_CONNECT_TIMEOUT": "soon"})
