"""Fixtures: a throwaway PostgreSQL per test session, a fresh database per test, SQLite files.

`db_url` is parametrized over every engine: a test that takes it is part of the conformance
suite (tests/core/conformance). A new engine is one more entry in ENGINES (and its URL
fixture), one dialect module and its golden SQL (tests/core/golden). Tests ask `capabilities`
what an engine can do, never its name.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tablequeue import Database, Queue, connect
from tablequeue.dialects import Capabilities
from tablequeue.spec import QueueResource
from tests.support import leftovers
from tests.support.kube import ControlPlane, control_plane
from tests.support.mariadb_server import MariaDbServer, mariadb_server
from tests.support.postgres_server import PostgresServer, postgres_server

pytest_plugins = ["tests.support.markers", "tests.support.go_builds"]
ENGINES = {
    "postgresql": "postgres_url",
    "sqlite": "sqlite_url",
    "mariadb": "mariadb_url",
    "mariadb-odbc": "mariadb_odbc_url",
    "mssql": "mssql_url",
}
"""Every engine the conformance suite runs on, with the fixture giving a fresh database URL."""
EACH_ENGINE_ONCE = [name for name in ENGINES if name != "mariadb-odbc"]
"""ENGINES without those that reach an engine already there through another Python driver (what
differs is the driver's, which the conformance suite proves): the `db_url` of the floors above
the core, the worker, the API, the CLI and the pipeline (tests/support/engines.py)."""
MSSQL_URL_VARIABLE = "TABLEQUEUE_TEST_MSSQL_URL"


def engines_here() -> list[str]:
    """The engines this machine runs tests on: SQL Server only when MSSQL_URL_VARIABLE names one."""
    return [name for name in ENGINES if name != "mssql" or os.environ.get(MSSQL_URL_VARIABLE)]


ROOT = Path(__file__).resolve().parent.parent


def pytest_sessionstart(session: pytest.Session) -> None:
    """Servers a killed run left behind are stopped before this one starts its own."""
    leftovers.reap()


_database_numbers = itertools.count()
_namespace_numbers = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> str:
    return postgres.create_database(f"test_{next(_database_numbers)}")


@pytest.fixture(scope="session")
def mariadb() -> Iterator[MariaDbServer]:
    with mariadb_server() as server:
        yield server


@pytest.fixture
def mariadb_url(mariadb: MariaDbServer) -> str:
    """MariaDB through PyMySQL."""
    return mariadb.create_database(f"test_{next(_database_numbers)}")


@pytest.fixture
def mariadb_odbc_url(mariadb: MariaDbServer) -> str:
    """MariaDB through pyodbc and MariaDB's ODBC driver (a DSN-less mysql+pyodbc URL)."""
    name = f"test_{next(_database_numbers)}"
    mariadb.create_database(name)
    return mariadb.odbc_url(name)


@pytest.fixture
def mssql_url() -> Iterator[str]:
    """A fresh database on the SQL Server that TABLEQUEUE_TEST_MSSQL_URL names (an
    `mssql+pyodbc://` URL of a login that may create databases); none runs here."""
    server_url = os.environ.get(MSSQL_URL_VARIABLE)
    if not server_url:
        pytest.skip("no SQL Server: set TABLEQUEUE_TEST_MSSQL_URL to run the suite against one")
    name = f"tablequeue_test_{os.getpid()}_{next(_database_numbers)}"
    server = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    quoted = server.dialect.identifier_preparer.quote(name)
    with server.connect() as connection:
        connection.exec_driver_sql(f"CREATE DATABASE {quoted}")
    try:
        yield sa.make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with server.connect() as connection:
            connection.exec_driver_sql(
                f"ALTER DATABASE {quoted} SET SINGLE_USER WITH ROLLBACK IMMEDIATE"
            )
            connection.exec_driver_sql(f"DROP DATABASE {quoted}")
        server.dispose()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'queue.db'}"


@pytest.fixture(params=list(ENGINES))
def db_url(request: pytest.FixtureRequest) -> str:
    return engine_url(request)


def engine_url(request: pytest.FixtureRequest) -> str:
    """The fresh database URL of the engine a test is parametrized with."""
    return str(request.getfixturevalue(ENGINES[request.param]))


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    with connect(db_url) as db:
        yield db


@pytest.fixture
def capabilities(database: Database) -> Capabilities:
    """What the engine under test can do (notifies, estimates counts, vacuums)."""
    return database.dialect.capabilities


@pytest.fixture
def make_queue(database: Database) -> Callable[..., Queue]:
    """Apply a Queue with the given spec fields (snake_case) and return its handle."""

    def make(name: str = "orders", **spec: Any) -> Queue:
        database.apply(QueueResource.from_name(name, **spec))
        return database.queue(name)

    return make


@pytest.fixture(scope="session")
def kube() -> Iterator[ControlPlane]:
    """One real control plane for the session (built by scripts/setup), the Queue CRD installed."""
    # Installed before the controller manager starts: its garbage collector then collects a
    # deleted Queue's Deployment at once (see ControlPlane._install_crd).
    with control_plane(crds=[ROOT / "crds" / "queue.yaml"]) as plane:
        yield plane


@pytest.fixture
def namespace(kube: ControlPlane) -> Iterator[str]:
    """A namespace of its own for each test."""
    name = f"tq-{next(_namespace_numbers)}"
    kube.kubectl("create", "namespace", name)
    yield name
    # Queues left behind keep their finalizer when their operator is gone: the namespace stays
    # Terminating, which harms nobody; the control plane goes away with the session.
    kube.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found")
