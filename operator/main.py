"""`tablequeue operator`: run the kopf operator, with /metrics and kopf's liveness endpoint."""

from __future__ import annotations

import asyncio
import secrets
import socket
import warnings
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

import kopf
from prometheus_client import start_http_server

from tablequeue.errors import QueueSpecWarning
from tablequeue.settings.operator import OperatorSettings

from .registrations import registry
from .state import OperatorState

if TYPE_CHECKING:
    # kopf.run's `identity` is a NewType of str that kopf exports under no public name: only
    # the type checker reads its private module (and fails if kopf moves it); at run time the
    # identity is the plain string kopf.run takes.
    from kopf._core.engines.peering import Identity


def run(settings: OperatorSettings) -> None:
    # INFO to stderr, each line naming its Queue: only `kopf run` configures logging by itself.
    kopf.configure(log_prefix=True)
    # apply_queue reports these per Queue (log line and Warning event), not as Python's.
    warnings.filterwarnings("ignore", category=QueueSpecWarning)
    start_http_server(settings.metrics_port)
    asyncio.run(
        kopf.operator(
            registry=registry(settings.interval),
            memo=OperatorState(settings),
            clusterwide=not settings.namespaces,
            namespaces=list(settings.namespaces),
            liveness_endpoint=f"http://0.0.0.0:{settings.liveness_port}/healthz",
            standalone=settings.standalone,
            identity=peering_identity(),
        )
    )


def peering_identity() -> Identity:
    """Who this operator is among its peers, as kopf would say it, without the user name: kopf's
    own default asks the password database, which has no entry for the image's numeric user
    (65532) when Kubernetes runs it, and the operator exited at start."""
    started = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    text = f"tablequeue-operator@{socket.gethostname()}/{started}/{secrets.token_hex(3)}"
    return cast("Identity", text)
