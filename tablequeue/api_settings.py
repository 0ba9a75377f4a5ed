"""The HTTP API's options, defined once (`tablequeue api`).

Like the worker's (`tablequeue.worker_settings`): each field is a flag of `tablequeue api`
(`--admin-token` for `admin_token`) and an environment variable (`env_names`); a flag wins over
its variable. In the core, not in `tablequeue.api`, so that the `tablequeue` command can build its
flags without the api extra installed.
"""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict

from .settings_env import env_field, env_names_of


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


def env_names(field: str) -> tuple[str, ...]:
    """The variables of a field, the first set one wins: `("TABLEQUEUE_API_PORT",
    "TABLEQUEUE_PORT")` for `port` (the API's own name first: one environment may set both)."""
    return env_names_of(ApiSettings, field)
