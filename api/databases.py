"""The databases the API serves, by name: `default` (`--db`) and those of `--databases`.

A route names its database with the `database` query parameter; without it, it reads the
default one, so the URLs of a single-database API mean what they always meant.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from starlette.requests import Request

from tablequeue import Database, Message, errors
from tablequeue.api_settings import DEFAULT_DATABASE


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


@dataclass(frozen=True)
class Databases:
    """Every database by name, the default one first."""

    by_name: Mapping[str, Database]

    @classmethod
    def of(cls, database: Database | Mapping[str, Database]) -> Databases:
        """One database (named `default`), or several by name: `default` among them."""
        if isinstance(database, Database):
            return cls({DEFAULT_DATABASE: database})
        if DEFAULT_DATABASE not in database:
            raise ValueError(f"the databases need one named {DEFAULT_DATABASE!r}")
        rest = {name: db for name, db in database.items() if name != DEFAULT_DATABASE}
        return cls({DEFAULT_DATABASE: database[DEFAULT_DATABASE]} | rest)

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
