"""The HTTP API's options, defined once (`tablequeue api`).

Like the worker's (`tablequeue.settings.worker`): each field is a flag of `tablequeue api`
(`--admin-token` for `admin_token`) and an environment variable (`env_names`); a flag wins over
its variable. In the core, not in `tablequeue.api`, so that the `tablequeue` command can build its
flags without the api extra installed.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from .env import env_field, env_names_of

DEFAULT_DATABASE = "default"
"""The name of the database `db` gives: what a route without `?database=` reads."""
DATABASE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


class ApiSettings(BaseSettings):
    """Options of the API process. Each field is read from the environment variables of
    `env_names` (the first set one), unless its flag is given."""

    # Like click, an empty variable counts as unset; flags reach the model by field name.
    model_config = SettingsConfigDict(env_ignore_empty=True, populate_by_name=True, frozen=True)

    db: str = env_field(
        ...,
        "TABLEQUEUE_DB",
        description="Database URL, e.g. postgresql://user:pw@host/db or sqlite:///queues.db.",
    )
    databases: Annotated[tuple[str, ...], NoDecode] = env_field(
        (),
        "TABLEQUEUE_API_DATABASES",
        description="More databases the API serves, each NAME=URL (NAME: lower-case letters, "
        "digits and -, as a DNS label); repeat the flag, or separate them by spaces in the "
        f"variable. `db` is the one named {DEFAULT_DATABASE}.",
    )
    host: str = env_field(
        "127.0.0.1",
        "TABLEQUEUE_API_HOST",
        "TABLEQUEUE_HOST",
        description="Address to listen on (0.0.0.0: every interface).",
    )
    port: int = env_field(
        8000,
        "TABLEQUEUE_API_PORT",
        "TABLEQUEUE_PORT",
        ge=1,
        le=65535,
        description="Port of the API, the admin UI and /livez, /readyz, /metrics.",
    )
    admin_token: str | None = env_field(
        None,
        "TABLEQUEUE_API_ADMIN_TOKEN",
        min_length=1,
        description="Bearer token that may read and change things (unset: none).",
    )
    read_token: str | None = env_field(
        None,
        "TABLEQUEUE_API_READ_TOKEN",
        min_length=1,
        description="Bearer token that may only read (unset: none).",
    )

    @field_validator("databases", mode="before")
    @classmethod
    def _split_variable(cls, value: object) -> object:
        return tuple(value.split()) if isinstance(value, str) else value

    @field_validator("databases")
    @classmethod
    def _check_databases(cls, entries: tuple[str, ...]) -> tuple[str, ...]:
        named_urls(entries, "unused")  # raises ValueError naming the entry
        return entries

    def database_urls(self) -> dict[str, str]:
        """Every database by name, `db` first as `default`."""
        return named_urls(self.databases, self.db)


def named_urls(entries: tuple[str, ...], default_url: str) -> dict[str, str]:
    """`{"default": default_url}` and each `NAME=URL` entry; ValueError for an entry without
    `=`, a name that is not a DNS label, or a name given twice."""
    urls = {DEFAULT_DATABASE: default_url}
    for entry in entries:
        name, equals, url = entry.partition("=")
        if not equals or not url:
            raise ValueError("each database is NAME=URL: one has no NAME= before its URL")
        if not DATABASE_NAME.match(name):
            raise ValueError(
                f"database name {name!r}: lower-case letters, digits and - (a DNS label), "
                "starting with a letter, at most 63"
            )
        if name in urls:
            twice = "is --db's" if name == DEFAULT_DATABASE else "is given twice"
            raise ValueError(f"database name {name!r} {twice}")
        urls[name] = url
    return urls


def env_names(field: str) -> tuple[str, ...]:
    """The variables of a field, the first set one wins: `("TABLEQUEUE_API_PORT",
    "TABLEQUEUE_PORT")` for `port` (the API's own name first: one environment may set both)."""
    return env_names_of(ApiSettings, field)
