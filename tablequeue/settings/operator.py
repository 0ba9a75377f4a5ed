"""The operator's options, defined once (`tablequeue operator`).

Like the worker's (`tablequeue.settings.worker`): each field is a flag of `tablequeue operator`
(`--worker-image` for `worker_image`) and an environment variable (`env_names`); a flag wins
over its variable. In the core, not in `tablequeue.operator`, so that the `tablequeue` command can
build its flags without the operator extra installed.
"""

from __future__ import annotations

import re
from importlib.metadata import version
from typing import Annotated

from pydantic import BeforeValidator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from ..spec import MAX_REPLICAS, OPERATOR_MAX_REPLICAS, QueueSpec
from .env import env_field, env_names_of


def _words(value: object) -> object:
    """`"a b,c"` -> `["a", "b", "c"]`: a variable lists namespaces apart by spaces or commas
    (and a flag each may do the same)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        return value
    return [w for item in items for w in re.split(r"[\s,]+", str(item)) if w]


class OperatorSettings(BaseSettings):
    """Options of the operator process. Each field is read from the environment variables of
    `env_names` (the first set one), unless its flag is given."""

    # Like click, an empty variable counts as unset; flags reach the model by field name.
    model_config = SettingsConfigDict(env_ignore_empty=True, populate_by_name=True, frozen=True)

    namespaces: Annotated[tuple[str, ...], NoDecode, BeforeValidator(_words)] = env_field(
        (),
        "TABLEQUEUE_NAMESPACES",
        description="Watch only these namespaces (a flag each; the variable: apart by spaces "
        "or commas) [default: all].",
    )
    worker_image: str = env_field(
        f"tablequeue/worker:{version('tablequeue')}",  # Dockerfile.worker's, the chart's
        "TABLEQUEUE_WORKER_IMAGE",
        min_length=1,
        description="Image of the worker sidecar when a Queue names none.",
    )
    interval: float = env_field(
        10.0,
        "TABLEQUEUE_OPERATOR_INTERVAL",
        ge=0.5,
        description="Seconds between status updates and scaling decisions of each Queue.",
    )
    metrics_port: int = env_field(
        9090,
        "TABLEQUEUE_METRICS_PORT",
        ge=1,
        le=65535,
        description="Port of the operator's /metrics.",
    )
    liveness_port: int = env_field(
        8080,
        "TABLEQUEUE_LIVENESS_PORT",
        ge=1,
        le=65535,
        description="Port of kopf's liveness endpoint (/healthz).",
    )
    max_replicas: int = env_field(
        OPERATOR_MAX_REPLICAS,
        "TABLEQUEUE_OPERATOR_MAX_REPLICAS",
        ge=1,
        le=MAX_REPLICAS,
        description="The most worker replicas a Queue may ask for; more is Ready=False "
        "(TooManyReplicas).",
    )
    allow_sqlite: bool = env_field(
        False,
        "TABLEQUEUE_OPERATOR_ALLOW_SQLITE",
        description="Serve Queues whose Secret names a sqlite:// URL: a file in the operator's "
        "own file system, which any tenant's Secret could choose (refused: Ready=False, "
        "SQLiteNotAllowed).",
    )
    standalone: bool = env_field(
        True,
        "TABLEQUEUE_OPERATOR_STANDALONE",
        description="One operator alone (the default); off (--peering): several operator "
        "replicas take turns (needs kopf's peering CRD).",
    )
    archive_image: str = env_field(
        f"tablequeue/pipeline:{version('tablequeue')}",  # Dockerfile.pipeline's, the chart's
        "TABLEQUEUE_ARCHIVE_IMAGE",
        min_length=1,
        description="Image of the archive CronJob (spec.archive) when a Queue names none.",
    )

    def check(self, spec: QueueSpec) -> None:
        """A valid spec this operator refuses by its settings: OverLimit names the field."""
        wanted = spec.workers.autoscaling.max_replicas
        if wanted > self.max_replicas:
            raise OverLimit(
                f"spec.workers.autoscaling.maxReplicas: {wanted} is more than this operator's "
                f"maximum of {self.max_replicas} (--max-replicas, "
                "TABLEQUEUE_OPERATOR_MAX_REPLICAS)"
            )


class OverLimit(ValueError):
    """A Queue asks for more than the operator's settings allow."""


def env_names(field: str) -> tuple[str, ...]:
    """The variables of a field, the first set one wins."""
    return env_names_of(OperatorSettings, field)
