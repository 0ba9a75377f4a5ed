"""The worker's options, defined once.

`tablequeue worker`'s flags, the `TABLEQUEUE_*` environment variables, the operator's sidecar
environment and the worker's runtime configuration are all derived from `WorkerSettings`.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BeforeValidator, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ..limits import MAX_LEASE_BATCH

if TYPE_CHECKING:
    from ..queue import Queue

APP_CHECK_OFF = "off"
"""`app_readiness_path`'s value for no check (the spec's null)."""
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]


def _default_owner() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def _upper(value: object) -> object:
    return value.upper() if isinstance(value, str) else value


class WorkerSettings(BaseSettings):
    """Options of one worker process; those left unset come from the queue's `workers` settings
    (`resolve`). Each field `name` is read from the environment variable `TABLEQUEUE_NAME`."""

    # Like click, an empty variable counts as unset.
    model_config = SettingsConfigDict(env_prefix="TABLEQUEUE_", env_ignore_empty=True)

    queue: str = Field(description="Queue name.")
    handler: str = Field(
        description="http://127.0.0.1:PORT/PATH (POST each message) or "
        "python:package.module:function."
    )
    handler_timeout: float = Field(30.0, description="HTTP handler: seconds to wait for an answer.")
    batch_size: int | None = Field(
        None,
        ge=1,
        le=MAX_LEASE_BATCH,
        description="Messages leased per round [default: the queue's workers.batchSize].",
    )
    concurrency: int | None = Field(
        None,
        ge=1,
        le=10_000,
        description="Handlers running at once [default: the queue's workers.concurrency].",
    )
    lease_seconds: float | None = Field(
        None,
        ge=0.1,
        description="Seconds a lease lasts before the message counts as lost "
        "[default: the queue's leaseSeconds].",
    )
    execution_timeout: float | None = Field(
        None, ge=0, description="Cancel a handler after this many seconds (0: no limit)."
    )
    poll_min: float | None = Field(
        None,
        ge=0.001,
        description="Seconds to wait after a round that found messages "
        "[default: the queue's workers.pollInterval.minSeconds].",
    )
    poll_max: float | None = Field(
        None,
        ge=0.001,
        description="Longest wait between rounds while the queue is empty "
        "[default: the queue's workers.pollInterval.maxSeconds].",
    )
    grace_period: float | None = Field(
        None,
        ge=0,
        description="On SIGTERM, seconds to let running handlers finish "
        "[default: the queue's workers.gracePeriodSeconds].",
    )
    app_readiness_path: str | None = Field(
        None,
        pattern=f"^(/.*|{APP_CHECK_OFF})$",
        description="HTTP handler: lease only while GET on this path of the handler's host and "
        f"port answers (status < 500); {APP_CHECK_OFF!r}: no check.",
    )
    prestop_hooks: int = Field(
        0,
        ge=0,
        le=100,
        description="How many app containers beside the worker ask GET /drained in their preStop "
        "hook (the operator sets it): after draining, the worker waits for their requests (at "
        "most 5 s) before it exits, so that no hook finds it gone.",
    )
    sweep_interval: float = Field(
        30.0,
        ge=0.1,
        description="Seconds between sweeps (lost leases, expired messages).",
    )
    purge_interval: float = Field(
        60.0,
        ge=0.1,
        description="Seconds between retention rounds (keepProcessedFor, keepResultsFor); "
        "one worker of a queue purges at a time.",
    )
    keep_audit_days: float = Field(
        90.0,
        ge=1,
        description="Days the audit trail (who changed what through the API, UI and CLI) is "
        "kept, at least 1 (any worker's setting applies to the whole trail); the retention "
        "rounds delete older entries.",
    )
    heartbeat_interval: float = Field(
        5.0, ge=0.1, le=3600, description="Seconds between heartbeats in tablequeue_workers."
    )
    schedule_interval: float = Field(
        5.0, ge=0.1, description="Seconds between checks for due ticks of the queue's schedules."
    )
    vacuum_interval: float = Field(
        2.0, ge=0.1, description="PostgreSQL: seconds between checks for a table to vacuum."
    )
    rollup_interval: float = Field(
        20.0,
        ge=0,
        description="Seconds between writes of the chart rollup (counts per minute); 0: none.",
    )
    listen: bool = Field(
        True, description="PostgreSQL: wake on NOTIFY instead of waiting for the next poll."
    )
    listen_db: str | None = Field(
        None,
        description="PostgreSQL: a URL straight to the server for LISTEN when --db goes "
        "through a transaction pooler (?pooler=transaction) [env TABLEQUEUE_LISTEN_DB]",
    )
    host: str = Field("0.0.0.0", description="Address of /livez, /readyz and /metrics.")
    port: int = Field(9090, ge=0, le=65535, description="Port of /livez, /readyz and /metrics.")
    owner: str = Field(
        default_factory=_default_owner, description="Lease owner name [default: host-pid-random]"
    )
    exit_when_idle: bool = Field(False, description="Exit once nothing is due or running.")
    log_level: Annotated[LogLevel, BeforeValidator(_upper)] = Field(
        "INFO", description="Lowest level of the JSON log lines on stderr."
    )
    db: str = Field(description="Database URL [env TABLEQUEUE_DB]")

    def resolve(self, queue: Queue) -> None:
        """Options not given on the command line come from the queue's `workers` settings."""
        workers = queue.spec.workers
        self.batch_size = self.batch_size or workers.batch_size
        self.concurrency = self.concurrency or workers.concurrency
        if self.lease_seconds is None:
            self.lease_seconds = float(queue.spec.lease_seconds)
        if self.execution_timeout is None:
            self.execution_timeout = workers.execution_timeout_seconds
        if self.poll_min is None:
            self.poll_min = workers.poll_interval.min_seconds
        if self.poll_max is None:
            self.poll_max = workers.poll_interval.max_seconds
        if self.grace_period is None:
            self.grace_period = workers.grace_period_seconds
        if self.app_readiness_path is None:
            self.app_readiness_path = workers.app_readiness_path or APP_CHECK_OFF

    @property
    def app_check_path(self) -> str | None:
        """The path the worker GETs before it leases (after `resolve`); None: no check."""
        path = self.app_readiness_path
        return None if path in (None, APP_CHECK_OFF) else path


def env_name(field: str) -> str:
    """The environment variable of a field, e.g. `TABLEQUEUE_BATCH_SIZE` for `batch_size`."""
    if field not in WorkerSettings.model_fields:
        raise KeyError(f"the worker has no option {field!r}")
    return f"{WorkerSettings.model_config['env_prefix']}{field}".upper()


def environment(values: Mapping[str, object]) -> dict[str, str]:
    """The environment variables that give a worker these options (fields by name)."""
    return {env_name(field): str(value) for field, value in values.items()}
