"""Fixtures: a throwaway PostgreSQL per test session, a fresh database per test, SQLite files.

`db_url` is parametrized over every engine: a test that takes it is part of the conformance
suite. A new engine is one more fixture branch here and one dialect module.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tablequeue import Database, Queue, connect
from tablequeue.spec import QueueResource

from .postgres_server import PostgresServer, postgres_server

ENGINES = ["postgresql", "sqlite"]
_database_numbers = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> str:
    return postgres.create_database(f"test_{next(_database_numbers)}")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'queue.db'}"


@pytest.fixture(params=ENGINES)
def db_url(request: pytest.FixtureRequest) -> str:
    fixture = {"postgresql": "postgres_url", "sqlite": "sqlite_url"}[request.param]
    return str(request.getfixturevalue(fixture))


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    with connect(db_url) as db:
        yield db


@pytest.fixture
def make_queue(database: Database) -> Callable[..., Queue]:
    """Apply a Queue with the given spec fields (snake_case) and return its handle."""

    def make(name: str = "orders", **spec: Any) -> Queue:
        database.apply(QueueResource.from_name(name, **spec))
        return database.queue(name)

    return make
