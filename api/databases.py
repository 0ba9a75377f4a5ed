"""The databases the API serves, by name: `default` (`--db`) and those of `--databases`.

A route names its database with the `database` query parameter; without it, it reads the
default one, so the URLs of a single-database API mean what they always meant.

Each database has a few slots (`slot`): a request holds one of its database's while its route
runs on the thread pool, and waits for one without a thread. A database that stops answering
then holds at most its own slots' threads; its other requests fail (503) instead of taking the
threads every other database's requests need (with the connect back-off of `main`, at once
after its first failed connect).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass

from starlette.requests import Request

from tablequeue import Database, Message, errors
from tablequeue.settings.api import DEFAULT_DATABASE


@dataclass(frozen=True)
class QueueRef:
    """A queue in one of the databases: `NAME` (the default database) or `DATABASE/NAME`."""

    database: str
    name: str

    @classmethod
    def parse(cls, text: str) -> QueueRef:
        database, slash, name = text.rpartition("/")
        if slash and not database:
            raise errors.InvalidInput(f"queue {text!r}: give NAME or DATABASE/NAME")
        return cls(database or DEFAULT_DATABASE, name)


class DatabaseNotFound(errors.TableQueueError, LookupError):
    """A `database` the API does not serve (404)."""


REQUESTS_PER_DATABASE = 10
"""Requests a database's routes run at a time: below its pool's connections (5, and 10 more
made on demand), and a quarter of the thread pool's 40."""
SLOT_WAIT_SECONDS = 5.0
"""How long a request waits for a slot of its database before it is a 503."""


@dataclass(frozen=True)
class Databases:
    """Every database by name, the default one first."""

    by_name: Mapping[str, Database]
    slots: Mapping[str, asyncio.Semaphore]
    """Each database's `REQUESTS_PER_DATABASE` slots (`slot`)."""

    @classmethod
    def of(cls, database: Database | Mapping[str, Database]) -> Databases:
        """One database (named `default`), or several by name: `default` among them."""
        if isinstance(database, Database):
            database = {DEFAULT_DATABASE: database}
        if DEFAULT_DATABASE not in database:
            raise ValueError(f"the databases need one named {DEFAULT_DATABASE!r}")
        rest = {name: db for name, db in database.items() if name != DEFAULT_DATABASE}
        by_name = {DEFAULT_DATABASE: database[DEFAULT_DATABASE]} | rest
        return cls(by_name, {name: asyncio.Semaphore(REQUESTS_PER_DATABASE) for name in by_name})

    @contextlib.asynccontextmanager
    async def slot(self, name: str | None) -> AsyncIterator[Database]:
        """The database `name` (the default one for None), with one of its slots held."""
        database = self.get(name)
        slots = self.slots[name or DEFAULT_DATABASE]
        try:
            await asyncio.wait_for(slots.acquire(), SLOT_WAIT_SECONDS)
        except TimeoutError:
            raise errors.DatabaseUnavailable(
                f"database {name or DEFAULT_DATABASE!r} ({database.shown_url}): "
                f"{REQUESTS_PER_DATABASE} requests already wait on it"
            ) from None
        try:
            yield database
        finally:
            slots.release()

    @property
    def default(self) -> Database:
        return self.by_name[DEFAULT_DATABASE]

    @property
    def several(self) -> bool:
        """Whether there is more than the default one (pages then name each queue's database)."""
        return len(self.by_name) > 1

    def get(self, name: str | None) -> Database:
        """The database `name`, the default one for None; DatabaseNotFound otherwise."""
        if name is None:
            return self.default
        try:
            return self.by_name[name]
        except KeyError:
            served = ", ".join(self.by_name)
            raise DatabaseNotFound(f"no database named {name!r} (served: {served})") from None

    def find(self, request: Request) -> Database | None:
        """The database a request names (the default one if it names none), None if unknown:
        for error handlers, which run outside the routes' dependencies."""
        try:
            return self.get(request.query_params.get("database"))
        except DatabaseNotFound:
            return None

    def find_messages(
        self, key: str, name: str | None = None
    ) -> tuple[list[tuple[str, str, Message]], list[tuple[str, str]]]:
        """Messages whose message id or tracking id is `key` in the database `name`, or in every
        one: (database, queue, message) each, and (database, public error) for each database
        that could not be searched. A key no database can look up is InvalidInput."""
        searched = [(name, self.get(name))] if name is not None else list(self)
        found: list[tuple[str, str, Message]] = []
        unreachable: list[tuple[str, str]] = []
        for database_name, database in searched:
            try:
                hits = database.find_messages(key)
            except errors.DatabaseUnavailable as error:
                unreachable.append((database_name, error.public))
                continue
            found += [(database_name, queue, message) for queue, message in hits]
        return found, unreachable

    def __iter__(self) -> Iterator[tuple[str, Database]]:
        return iter(self.by_name.items())
