"""Kubernetes objects as pure functions of a Queue: no cluster needed to build or test them.

The kopf handlers only read, build with these, apply and report.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from tablequeue.settings import worker as worker_settings
from tablequeue.spec import QueueSpec

WORKER_CONTAINER = "tablequeue-worker"
WORKER_PORT = 9090
QUEUE_LABEL = "tablequeue.dev/queue"
BACKLOG_METRIC = "tablequeue_backlog"
DRAINED_PATH = "/drained"
"""The worker's endpoint (on its metrics port) that answers once it got SIGTERM and its running
handlers finished: the preStop hook of the app containers waits on it."""
SHUTDOWN_MARGIN_SECONDS = 10
"""Pod grace beyond the worker's grace period: the worker gives back its leases, records the
last outcomes and exits (about 5 s), then the app, whose SIGTERM the hook held, exits (5 s)."""
HPA_FLOOR_REASON = "HPA mode: an HPA cannot scale from zero"
"""Why the operator raised a worker Deployment from 0 in HPA mode (in its Scaled Events)."""


def labels(name: str, app: str = "tablequeue-worker") -> dict[str, str]:
    """The labels of an object the operator keeps for the Queue `name`: its workers by default."""
    return {
        "app.kubernetes.io/name": app,
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/managed-by": "tablequeue-operator",
        QUEUE_LABEL: name,
    }


def owner_reference(body: dict[str, Any]) -> dict[str, Any]:
    """Makes the Queue own an object: deleting the Queue garbage-collects it."""
    return {
        "apiVersion": body["apiVersion"],
        "kind": body["kind"],
        "name": body["metadata"]["name"],
        "uid": body["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _metadata(name: str, namespace: str, owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": deployment_name(name),
        "namespace": namespace,
        "labels": labels(name),
        "ownerReferences": [owner],
    }


def deployment_name(queue_name: str) -> str:
    return f"{queue_name}-workers"[:63].rstrip("-")


def handler_setting(spec: QueueSpec) -> str:
    """The worker's --handler: the app container on localhost, or a Python function."""
    handler = spec.workers.handler
    if handler.python:
        return f"python:{handler.python}"
    assert handler.http is not None
    return f"http://127.0.0.1:{handler.http.port}{handler.http.path}"


def worker_environment(name: str, spec: QueueSpec) -> list[dict[str, Any]]:
    """Everything the sidecar needs, as TABLEQUEUE_* variables (see `tablequeue worker --help`)."""
    workers = spec.workers
    assert spec.database is not None, "validated before building"
    secret = spec.database.secret_ref
    options: dict[str, object] = {
        "queue": name,
        "handler": handler_setting(spec),
        "batch_size": workers.batch_size,
        "concurrency": workers.concurrency,
        "execution_timeout": workers.execution_timeout_seconds,
        "poll_min": workers.poll_interval.min_seconds,
        "poll_max": workers.poll_interval.max_seconds,
        "grace_period": worker_grace_period(spec),
        "port": WORKER_PORT,
    }
    hooks = sum(1 for c in app_containers(spec) if not _own_pre_stop(c))
    if hooks:
        options["prestop_hooks"] = hooks
    if workers.handler.http is not None:
        options["handler_timeout"] = workers.handler.http.timeout_seconds
        options["app_readiness_path"] = workers.app_readiness_path or worker_settings.APP_CHECK_OFF
    env: list[dict[str, Any]] = [
        {
            "name": worker_settings.env_name("db"),
            "valueFrom": {"secretKeyRef": {"name": secret.name, "key": secret.key}},
        },
        # The pod's name for the worker's heartbeat row (`tablequeue workers`).
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]
    env += [
        {"name": key, "value": value} for key, value in worker_settings.environment(options).items()
    ]
    return env


STARTUP_PROBES = 60
"""Startup probes 2 s apart before the kubelet gives up on a starting worker (two minutes)."""


def worker_container(name: str, spec: QueueSpec, default_image: str) -> dict[str, Any]:
    probe = {"httpGet": {"port": "metrics"}, "periodSeconds": 10, "failureThreshold": 3}
    return {
        "name": WORKER_CONTAINER,
        "image": spec.workers.image or default_image,
        "command": ["tablequeue", "worker"],
        "env": worker_environment(name, spec),
        "ports": [{"name": "metrics", "containerPort": WORKER_PORT}],
        # Liveness counts only once the worker has served /livez: a start slowed by a loaded
        # node (imports, the first connection) gets two minutes before it can be restarted.
        "startupProbe": {
            "httpGet": {"path": "/livez", "port": "metrics"},
            "periodSeconds": 2,
            "failureThreshold": STARTUP_PROBES,
        },
        "livenessProbe": probe | {"httpGet": {"path": "/livez", "port": "metrics"}},
        "readinessProbe": probe | {"httpGet": {"path": "/readyz", "port": "metrics"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }


def handler_time_limit(spec: QueueSpec) -> float | None:
    """The longest one handler runs: `executionTimeoutSeconds` when set, and for an HTTP handler
    its request's `timeoutSeconds` (the shorter of the two); None: no limit (a Python handler
    without `executionTimeoutSeconds`)."""
    workers = spec.workers
    limits = [workers.execution_timeout_seconds] if workers.execution_timeout_seconds else []
    if workers.handler.http is not None:
        limits.append(workers.handler.http.timeout_seconds)
    return min(limits) if limits else None


def worker_grace_period(spec: QueueSpec) -> float:
    """The worker's grace period on SIGTERM for its running handlers: `gracePeriodSeconds` when
    the Queue sets it (a shorter one than the handlers' time limit stops longer handlers, as
    failures); else its default, raised to the handlers' time limit so that a handler that
    started before SIGTERM may finish."""
    workers = spec.workers
    if "grace_period_seconds" in workers.model_fields_set:
        return workers.grace_period_seconds
    return max(workers.grace_period_seconds, handler_time_limit(spec) or 0.0)


def termination_grace_period(spec: QueueSpec, users: int | None = None) -> int:
    """The pod's terminationGracePeriodSeconds: the worker's grace period plus
    SHUTDOWN_MARGIN_SECONDS, never less than the template's own (`users`)."""
    grace = math.ceil(worker_grace_period(spec)) + SHUTDOWN_MARGIN_SECONDS
    return max(users or 0, grace)


def wait_for_drained(container: dict[str, Any]) -> dict[str, Any]:
    """An app container whose SIGTERM waits until the worker drained: a preStop hook on the
    worker's /drained (by port number: a named port in a hook is looked up in the hook's own
    container). A container with its own preStop keeps it."""
    if _own_pre_stop(container):
        return container
    hook = {"httpGet": {"path": DRAINED_PATH, "port": WORKER_PORT}}
    return container | {"lifecycle": (container.get("lifecycle") or {}) | {"preStop": hook}}


def _own_pre_stop(container: dict[str, Any]) -> bool:
    return bool((container.get("lifecycle") or {}).get("preStop"))


def app_containers(spec: QueueSpec) -> list[dict[str, Any]]:
    """The containers of the user's template, the worker sidecar left out."""
    template = spec.workers.template or {}
    containers = (template.get("spec") or {}).get("containers") or []
    return [c for c in containers if c.get("name") != WORKER_CONTAINER]


def pod_template(name: str, spec: QueueSpec, default_image: str) -> dict[str, Any]:
    """The user's PodTemplateSpec with the worker added as a sidecar, our labels merged in, the
    app containers' SIGTERM held until the worker drained, and a grace period that covers it."""
    template = copy.deepcopy(spec.workers.template or {})
    metadata = template.setdefault("metadata", {})
    metadata["labels"] = {**metadata.get("labels", {}), **labels(name)}
    metadata["annotations"] = {
        **metadata.get("annotations", {}),
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(WORKER_PORT),
    }
    pod = template.setdefault("spec", {})
    pod["containers"] = [
        *(wait_for_drained(c) for c in app_containers(spec)),
        worker_container(name, spec, default_image),
    ]
    pod["terminationGracePeriodSeconds"] = termination_grace_period(
        spec, pod.get("terminationGracePeriodSeconds")
    )
    return template


def deployment(
    name: str,
    namespace: str,
    spec: QueueSpec,
    owner: dict[str, Any],
    default_image: str,
    replicas: int | None,
) -> dict[str, Any]:
    """The worker Deployment; `replicas` None leaves the count out (the API server's default 1)."""
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(name, namespace, owner),
        "spec": {
            "selector": {"matchLabels": {QUEUE_LABEL: name}},
            "template": pod_template(name, spec, default_image),
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}},
        },
    }
    if replicas is not None:
        body["spec"]["replicas"] = replicas
    return body


def most_useful_replicas(spec: QueueSpec) -> int:
    """maxReplicas, or fewer when a limit keeps fewer busy: a global concurrency needs at most
    ceil(globalConcurrency / workers.concurrency) replicas, and a rate limit at most
    `rate_limit_replicas`."""
    caps = [spec.workers.autoscaling.max_replicas]
    if spec.global_concurrency is not None:
        caps.append(math.ceil(spec.global_concurrency / spec.workers.concurrency))
    by_rate = rate_limit_replicas(spec)
    if by_rate is not None:
        caps.append(by_rate)
    return min(caps)


def rate_limit_replicas(spec: QueueSpec) -> int | None:
    """The most replicas a rate limit keeps busy, None when it sets no bound (no rate limit, or
    handlers without a time limit). A handler runs at most T seconds (`handler_time_limit`), so
    the handlers running at once are at most those leased in the last T seconds: the bucket
    (`burst`) plus messagesPerSecond x T (Little's law with W <= T); each replica runs
    `workers.concurrency` of them."""
    limit, time_limit = spec.rate_limit, handler_time_limit(spec)
    if limit is None or time_limit is None:
        return None
    at_once = limit.bucket_size + limit.messages_per_second * time_limit
    return max(1, math.ceil(at_once / spec.workers.concurrency))


def fewest_replicas(spec: QueueSpec) -> int:
    """minReplicas, never above what the queue can use (`most_useful_replicas`)."""
    return min(spec.workers.autoscaling.min_replicas, most_useful_replicas(spec))


def hpa_min_replicas(spec: QueueSpec) -> int:
    """An HPA cannot scale to zero (nor from it, without the HPAScaleToZero alpha gate): in HPA
    mode `minReplicas: 0` means 1. Scale to zero is KEDA's or the operator's."""
    return max(fewest_replicas(spec), 1)


def workers_replicas(spec: QueueSpec, current: int | None) -> int:
    """The replica count to write into the worker Deployment outside Operator-mode scaling;
    `current` None: the Deployment does not exist yet.

    A new Deployment starts at minReplicas. An existing one keeps what its scaler set, except
    that in HPA mode it never stays at 0: the HPA controller reads a target at 0 replicas as
    "autoscaling disabled" and leaves it there for good, so the operator hands it over at the
    HPA's minReplicas (at least 1), and puts it back there if anything scales it to 0.
    """
    if spec.workers.autoscaling.mode == "HPA":
        return current or hpa_min_replicas(spec)
    return fewest_replicas(spec) if current is None else current


def horizontal_pod_autoscaler(
    name: str, namespace: str, spec: QueueSpec, owner: dict[str, Any], paused: bool = False
) -> dict[str, Any]:
    """autoscaling/v2 on the external metric tablequeue_backlog{queue=NAME} (prometheus-adapter),
    up to what the queue can use; held at its minimum while the queue is paused (`spec.paused`,
    or `paused` at runtime)."""
    scaling = spec.workers.autoscaling
    fewest = hpa_min_replicas(spec)
    paused = paused or spec.paused
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _metadata(name, namespace, owner),
        "spec": {
            "scaleTargetRef": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": deployment_name(name),
            },
            "minReplicas": fewest,
            "maxReplicas": fewest if paused else max(most_useful_replicas(spec), fewest),
            "metrics": [
                {
                    "type": "External",
                    "external": {
                        "metric": {
                            "name": BACKLOG_METRIC,
                            "selector": {"matchLabels": {"queue": name, "namespace": namespace}},
                        },
                        "target": {
                            "type": "AverageValue",
                            "averageValue": str(scaling.messages_per_replica),
                        },
                    },
                }
            ],
            "behavior": {
                "scaleDown": {"stabilizationWindowSeconds": math.ceil(scaling.cooldown_seconds)}
            },
        },
    }


@dataclass(frozen=True)
class Scaling:
    replicas: int
    last_busy: float
    """When the load last needed at least the current replica count (epoch seconds)."""


def scale(
    spec: QueueSpec,
    backlog: int,
    leased: int,
    current: int,
    last_busy: float,
    now: float,
    paused: bool = False,
) -> Scaling:
    """Operator mode: clamp(ceil((backlog + leased) / messagesPerReplica)) between
    `fewest_replicas` and `most_useful_replicas`; down only after the cooldown. Leased messages
    count as work, so busy workers are not scaled away; while paused the backlog does not."""
    scaling = spec.workers.autoscaling
    load = leased if paused else backlog + leased
    wanted = math.ceil(load / scaling.messages_per_replica)
    if leased:
        wanted = max(wanted, 1)
    wanted = min(max(wanted, fewest_replicas(spec)), most_useful_replicas(spec))
    if wanted >= current:
        return Scaling(wanted, now)
    if now - last_busy < scaling.cooldown_seconds:
        return Scaling(current, last_busy)
    return Scaling(wanted, now)
