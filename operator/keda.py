"""KEDA mode as pure functions of a Queue: a ScaledObject with a postgresql trigger, and the
TriggerAuthentication that hands KEDA the Queue's own database Secret.

Why the postgresql trigger (and not a prometheus one on tablequeue_backlog): KEDA then reads the
table itself, with no Prometheus and no running operator in the path, so workers scale from and
to zero even while the operator is down; and the number is the core's own goldened statement
(`Queries.load`). The price: KEDA's scaler speaks only PostgreSQL, and it takes the Secret's
URL as a libpq URL (`postgresql://` or `postgres://`, not SQLAlchemy's `postgresql+psycopg://`).
"""

from __future__ import annotations

import math
from typing import Any

import sqlalchemy as sa

from tablequeue.scaling import postgresql_load_query
from tablequeue.spec import QueueSpec

from .builders import deployment_name, fewest_replicas, labels, most_useful_replicas

GROUP = "keda.sh"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
PAUSED_REPLICAS = "autoscaling.keda.sh/paused-replicas"
"""KEDA holds the scale target at this many replicas and stops scaling while it is set."""
CONNECTION_SCHEMES = ("postgresql", "postgres")
"""URL schemes KEDA's postgresql scaler (pgx) reads as a URL."""


def load_query(table_name: str) -> str:
    """The load KEDA scales on: due messages (the operator's backlog) plus leased ones (work in
    hand, so busy workers are not scaled away), as one PostgreSQL statement; an empty queue
    reads 0 (KEDA would fail on NULL)."""
    return postgresql_load_query(table_name)


def connection_problem(url: str) -> str | None:
    """Why KEDA's postgresql scaler cannot use this database URL, or None."""
    try:
        scheme = sa.make_url(url).drivername
    except sa.exc.ArgumentError:
        return "the database URL is not a URL"
    if scheme in CONNECTION_SCHEMES:
        return None
    if scheme.startswith("postgresql+"):
        return (
            f"KEDA reads the Secret's URL with its postgresql scaler, which needs a libpq URL: "
            f"write it as postgresql://..., not {scheme}://..."
        )
    return f"KEDA mode needs a PostgreSQL database (KEDA's postgresql scaler); this one is {scheme}"


def _metadata(name: str, namespace: str, owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": deployment_name(name),
        "namespace": namespace,
        "labels": labels(name),
        "ownerReferences": [owner],
    }


def trigger_authentication(
    name: str, namespace: str, spec: QueueSpec, owner: dict[str, Any]
) -> dict[str, Any]:
    """KEDA's `connection` parameter from the Queue's own Secret: no copy of the password."""
    assert spec.database is not None, "validated before building"
    secret = spec.database.secret_ref
    return {
        "apiVersion": API_VERSION,
        "kind": "TriggerAuthentication",
        "metadata": _metadata(name, namespace, owner),
        "spec": {
            "secretTargetRef": [{"parameter": "connection", "name": secret.name, "key": secret.key}]
        },
    }


def scaled_object(
    name: str,
    namespace: str,
    spec: QueueSpec,
    owner: dict[str, Any],
    polling_seconds: float,
    paused: bool = False,
) -> dict[str, Any]:
    """The worker Deployment scaled by KEDA on `load_query`: activated from zero by any load,
    one replica per messagesPerReplica above that; back to minReplicas (zero by default) after
    cooldownSeconds without load. KEDA polls every `polling_seconds` (the operator's interval).
    Never more replicas than the queue can use; while the queue is paused (`spec.paused`, or
    `paused` at runtime), KEDA holds them at the minimum (its paused-replicas annotation)."""
    scaling = spec.workers.autoscaling
    cooldown = math.ceil(scaling.cooldown_seconds)
    fewest = fewest_replicas(spec)
    metadata = _metadata(name, namespace, owner)
    if paused or spec.paused:
        metadata["annotations"] = {PAUSED_REPLICAS: str(fewest)}
    return {
        "apiVersion": API_VERSION,
        "kind": "ScaledObject",
        "metadata": metadata,
        "spec": {
            "scaleTargetRef": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": deployment_name(name),
            },
            "pollingInterval": max(math.ceil(polling_seconds), 1),
            "cooldownPeriod": cooldown,
            "minReplicaCount": fewest,
            "maxReplicaCount": most_useful_replicas(spec),
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": cooldown}}
                }
            },
            "triggers": [
                {
                    "type": "postgresql",
                    "metadata": {
                        "query": load_query(spec.table_for(name)),
                        "targetQueryValue": str(scaling.messages_per_replica),
                        "activationTargetQueryValue": "0",
                    },
                    "authenticationRef": {"name": deployment_name(name)},
                }
            ],
        },
    }
