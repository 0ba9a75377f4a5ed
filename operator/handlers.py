"""kopf handlers: thin. Read the Queue, build with `builders`, apply, report status and Events.

- create/update/resume: create or migrate the table and registry row (default status), then the
  worker Deployment and, in HPA mode, its HorizontalPodAutoscaler;
- a timer: read the counts, export the queue gauges, patch `status`, scale (Operator mode);
- delete (through kopf's finalizer): drop the table when `deletionPolicy: Delete`.
A bad spec is `Ready=False` with a reason and an Event, never a crash loop; an unreachable
database is `DatabaseReachable=False` and a temporary error retried with back-off.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import kopf
import kubernetes
from kubernetes.client.exceptions import ApiException

from tablequeue import metrics
from tablequeue.database import Database, connect
from tablequeue.errors import DatabaseUnavailable, QueueNotFound, SpecError, TableQueueError
from tablequeue.models import QueueStats
from tablequeue.spec import QueueResource, validate_queue

from . import builders
from .conditions import condition, merge
from .crd import GROUP, PLURAL, VERSION

FINALIZER = "tablequeue.dev/finalizer"
logger = logging.getLogger(__name__)
MAX_RETRY_DELAY = 300
CONFLICT_RETRIES = 5
MAX_WORKERS = 20
"""Threads running the (synchronous) handlers."""


@dataclass
class Settings:
    worker_image: str = "tablequeue/worker:latest"
    interval: float = 10.0
    """Seconds between status updates and scaling decisions of each Queue."""


SETTINGS = Settings()
_databases: dict[str, Database] = {}
_databases_lock = threading.Lock()
_last_urls: dict[tuple[str, str], str] = {}
"""The database URL each Queue was last seen with: deleting a namespace deletes the Secret at
the same time as the Queue, and the table must still be dropped."""


def _delay(retry: int) -> float:
    return float(min(5 * 2**retry, MAX_RETRY_DELAY))


def _resource(body: kopf.Body) -> QueueResource:
    """The Queue as the core library reads it; SpecError names the field and the problem."""
    name = body["metadata"]["name"]
    return validate_queue(
        {
            "apiVersion": body["apiVersion"],
            "kind": body["kind"],
            "metadata": {"name": name, "namespace": body["metadata"]["namespace"]},
            "spec": dict(body.get("spec", {})),
        },
        f"queue {name}",
    )


class NotReady(Exception):
    """A condition to report and a temporary error to retry."""

    def __init__(self, kind: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.reason, self.message = kind, reason, message


def _database_url(namespace: str, resource: QueueResource) -> str:
    ref = resource.spec.database
    if ref is None:
        raise NotReady("DatabaseReachable", "NoDatabase", "spec.database.secretRef is required")
    try:
        secret = kubernetes.client.CoreV1Api(_client()).read_namespaced_secret(
            ref.secret_ref.name, namespace
        )
    except ApiException as error:
        if error.status == 404:
            raise NotReady(
                "DatabaseReachable", "SecretNotFound", f"secret {ref.secret_ref.name!r} not found"
            ) from None
        raise
    data = (secret.data or {}).get(ref.secret_ref.key)
    if data is None:
        raise NotReady(
            "DatabaseReachable",
            "SecretKeyNotFound",
            f"secret {ref.secret_ref.name!r} has no key {ref.secret_ref.key!r}",
        )
    return base64.b64decode(data).decode()


def _database(namespace: str, resource: QueueResource) -> Database:
    url = _database_url(namespace, resource)
    _last_urls[(namespace, resource.name)] = url
    return _connect(url)


def _connect(url: str) -> Database:
    with _databases_lock:
        if url not in _databases:
            try:
                _databases[url] = connect(url)
            except TableQueueError as error:
                raise NotReady("DatabaseReachable", "InvalidDatabaseURL", str(error)) from None
        return _databases[url]


def _fail(
    body: kopf.Body, patch: kopf.Patch, status: kopf.Status, problem: NotReady, retry: int
) -> kopf.TemporaryError:
    labels = {"namespace": body["metadata"]["namespace"], "queue": body["metadata"]["name"]}
    metrics.operator_reconcile_errors.labels(reason=problem.reason, **labels).inc()
    patch.status["conditions"] = merge(
        status.get("conditions"),
        [condition(problem.kind, False, problem.reason, problem.message)],
        body["metadata"].get("generation"),
    )
    kopf.warn(body, reason=problem.reason, message=problem.message)
    return kopf.TemporaryError(problem.message, delay=_delay(retry))


# --- reconcile ---------------------------------------------------------------------------------


@kopf.on.resume(GROUP, VERSION, PLURAL)
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL)
def reconcile(
    body: kopf.Body, patch: kopf.Patch, status: kopf.Status, retry: int, **_: Any
) -> None:
    namespace, generation = body["metadata"]["namespace"], body["metadata"].get("generation")
    try:
        resource = _resource(body)
    except (SpecError, ValueError) as error:
        message = str(error).splitlines()[0]
        patch.status["conditions"] = merge(
            status.get("conditions"),
            [condition("Ready", False, "InvalidSpec", message)],
            generation,
        )
        kopf.warn(body, reason="InvalidSpec", message=message)
        raise kopf.PermanentError(message) from None
    try:
        database = _database(namespace, resource)
        try:
            outcome = database.apply(resource)
        except DatabaseUnavailable as error:
            raise NotReady("DatabaseReachable", "DatabaseUnavailable", str(error)) from None
        except TableQueueError as error:
            raise NotReady("TableReady", type(error).__name__, str(error)) from None
    except NotReady as problem:
        raise _fail(body, patch, status, problem, retry) from None
    if outcome != "unchanged":
        kopf.info(body, reason="Table", message=f"table {resource.table} {outcome}")
    _apply_workers(resource, body)
    patch.status["observedGeneration"] = generation
    patch.status["effectiveDefaultStatus"] = database.default_status_of(resource.name)
    patch.status["conditions"] = merge(
        status.get("conditions"),
        [
            condition("DatabaseReachable", True, "Connected", database.shown_url),
            condition("TableReady", True, "TableReady", f"table {resource.table}, {outcome}"),
        ],
        generation,
    )


def _apply_workers(resource: QueueResource, body: kopf.Body) -> None:
    """The Deployment and, in HPA mode, its HPA. A conflict (the timer or an HPA changed the
    object between our read and our write) is retried at once with a fresh read, not left to
    kopf's one-minute back-off."""
    for attempt in range(1, CONFLICT_RETRIES + 1):
        try:
            _apply_workers_once(resource, body)
            return
        except ApiException as error:
            if error.status != 409 or attempt == CONFLICT_RETRIES:
                raise


def _apply_workers_once(resource: QueueResource, body: kopf.Body) -> None:
    apps = kubernetes.client.AppsV1Api(_client())
    name, namespace = resource.name, body["metadata"]["namespace"]
    owner = builders.owner_reference(dict(body))
    mode = resource.spec.workers.autoscaling.mode
    existing = _read(apps.read_namespaced_deployment, builders.deployment_name(name), namespace)
    replicas: int | None
    if existing is not None:
        replicas = existing.spec.replicas
    else:
        replicas = resource.spec.workers.autoscaling.min_replicas if mode != "HPA" else None
    wanted = builders.deployment(
        name, namespace, resource.spec, owner, SETTINGS.worker_image, replicas
    )
    if existing is None:
        apps.create_namespaced_deployment(namespace, _plain(wanted))
        kopf.info(
            body, reason="Workers", message=f"created Deployment {wanted['metadata']['name']}"
        )
    else:
        wanted["metadata"]["resourceVersion"] = existing.metadata.resource_version
        apps.replace_namespaced_deployment(wanted["metadata"]["name"], namespace, _plain(wanted))
    autoscaling = kubernetes.client.AutoscalingV2Api(_client())
    hpa_name = builders.deployment_name(name)
    hpa = _read(autoscaling.read_namespaced_horizontal_pod_autoscaler, hpa_name, namespace)
    if mode == "HPA":
        wanted_hpa = builders.horizontal_pod_autoscaler(name, namespace, resource.spec, owner)
        if hpa is None:
            autoscaling.create_namespaced_horizontal_pod_autoscaler(namespace, _plain(wanted_hpa))
            kopf.info(
                body, reason="Autoscaling", message=f"created HorizontalPodAutoscaler {hpa_name}"
            )
        else:
            wanted_hpa["metadata"]["resourceVersion"] = hpa.metadata.resource_version
            autoscaling.replace_namespaced_horizontal_pod_autoscaler(
                hpa_name, namespace, _plain(wanted_hpa)
            )
    elif hpa is not None:
        autoscaling.delete_namespaced_horizontal_pod_autoscaler(hpa_name, namespace)
        kopf.info(body, reason="Autoscaling", message=f"deleted HorizontalPodAutoscaler {hpa_name}")


def _plain(body: dict[str, Any]) -> Any:
    """The client takes plain dicts as bodies as well as its model classes."""
    return body


def _read(reader: Any, name: str, namespace: str) -> Any:
    try:
        return reader(name, namespace)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


# --- observe and scale -------------------------------------------------------------------------


def observe(body: kopf.Body, patch: kopf.Patch, status: kopf.Status, **_: Any) -> None:
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    generation = body["metadata"].get("generation")
    if body["metadata"].get("deletionTimestamp"):
        return  # being deleted: no status to keep, and its gauges are gone for good
    try:
        resource = _resource(body)
    except (SpecError, ValueError):
        return  # reported by reconcile
    labels = {"namespace": namespace, "queue": name}
    try:
        database = _database(namespace, resource)
        stats = database.queue(name).stats()
        effective_default_status = database.default_status_of(name)
    except NotReady as problem:
        _trouble(body, patch, status, problem)
        return
    except DatabaseUnavailable as error:
        _trouble(
            body, patch, status, NotReady("DatabaseReachable", "DatabaseUnavailable", str(error))
        )
        metrics.operator_reconcile_errors.labels(reason="DatabaseUnavailable", **labels).inc()
        return
    except QueueNotFound:
        return  # reconcile has not created it yet
    _export_gauges(namespace, name, stats)
    replicas = _scale(resource, namespace, body, stats.backlog, stats.leased, status)
    metrics.operator_desired_replicas.labels(**labels).set(replicas["desired"])
    gone = {state: None for state in status.get("counts") or {} if state not in stats.counts}
    patch.status.update(
        {
            "counts": stats.counts | gone,  # a merge patch removes a key only when set to null
            "backlog": stats.backlog,
            "oldestPendingSeconds": round(stats.oldest_pending_seconds, 3),
            "health": stats.health,
            "healthReasons": stats.health_reasons,
            "effectiveDefaultStatus": effective_default_status,
            "replicas": replicas,
        }
    )
    ready = replicas["ready"] >= replicas["desired"]
    patch.status["conditions"] = merge(
        status.get("conditions"),
        [
            condition("DatabaseReachable", True, "Connected", database.shown_url),
            condition(
                "WorkersReady",
                ready,
                "WorkersReady" if ready else "WorkersStarting",
                f"{replicas['ready']} of {replicas['desired']} worker replicas ready",
            ),
        ],
        generation,
    )


def _trouble(body: kopf.Body, patch: kopf.Patch, status: kopf.Status, problem: NotReady) -> None:
    """A condition turned False on the timer: a Warning Event and a log line when it turns, not
    on every tick."""
    previous = {c["type"]: c for c in status.get("conditions") or []}.get(problem.kind, {})
    if (previous.get("status"), previous.get("reason")) != ("False", problem.reason):
        kopf.warn(body, reason=problem.reason, message=problem.message)
        name = f"{body['metadata']['namespace']}/{body['metadata']['name']}"
        logger.warning("[%s] %s: %s", name, problem.reason, problem.message)
    patch.status["conditions"] = merge(
        status.get("conditions"),
        [condition(problem.kind, False, problem.reason, problem.message)],
        body["metadata"].get("generation"),
    )


_exported_statuses: dict[tuple[str, str], set[str]] = {}


def _export_gauges(namespace: str, name: str, stats: QueueStats) -> None:
    """The queue gauges; a status that has no rows any more reads 0, not its last count."""
    labels = {"namespace": namespace, "queue": name}
    exported = _exported_statuses.setdefault((namespace, name), set())
    for state in exported - stats.counts.keys():
        metrics.queue_messages.labels(status=state, **labels).set(0)
    for state, count in stats.counts.items():
        metrics.queue_messages.labels(status=state, **labels).set(count)
    exported.update(stats.counts)
    metrics.queue_backlog.labels(**labels).set(stats.backlog)
    metrics.queue_oldest_pending_age.labels(**labels).set(stats.oldest_pending_seconds)
    metrics.queue_healthy.labels(**labels).set(1 if stats.health in ("Healthy", "Disabled") else 0)


def _forget_gauges(namespace: str, name: str) -> None:
    """A deleted Queue leaves no series behind."""
    for state in _exported_statuses.pop((namespace, name), set()):
        with contextlib.suppress(KeyError):
            metrics.queue_messages.remove(namespace, name, state)
    for gauge in (
        metrics.queue_backlog,
        metrics.queue_oldest_pending_age,
        metrics.queue_healthy,
        metrics.operator_desired_replicas,
    ):
        with contextlib.suppress(KeyError):
            gauge.remove(namespace, name)


def _scale(
    resource: QueueResource,
    namespace: str,
    body: kopf.Body,
    backlog: int,
    leased: int,
    status: kopf.Status,
) -> dict[str, Any]:
    apps = kubernetes.client.AppsV1Api(_client())
    name = builders.deployment_name(resource.name)
    existing = _read(apps.read_namespaced_deployment, name, namespace)
    if existing is None:
        return {"desired": 0, "ready": 0}
    current = existing.spec.replicas or 0
    ready = (existing.status.ready_replicas or 0) if existing.status else 0
    result: dict[str, Any] = {"desired": current, "ready": ready}
    if resource.spec.workers.autoscaling.mode != "Operator":
        return result
    previous = (status.get("replicas") or {}).get("lastBusy", 0.0)
    decision = builders.scale(resource.spec, backlog, leased, current, previous, time.time())
    if decision.replicas != current:
        apps.patch_namespaced_deployment_scale(
            name, namespace, {"spec": {"replicas": decision.replicas}}
        )
        kopf.info(
            body,
            reason="Scaled",
            message=f"workers {current} -> {decision.replicas} "
            f"(backlog {backlog}, leased {leased})",
        )
    return {"desired": decision.replicas, "ready": ready, "lastBusy": decision.last_busy}


# --- delete ------------------------------------------------------------------------------------


@kopf.on.delete(GROUP, VERSION, PLURAL)
def delete(body: kopf.Body, retry: int, **_: Any) -> None:
    _forget_gauges(body["metadata"]["namespace"], body["metadata"]["name"])
    try:
        resource = _resource(body)
    except (SpecError, ValueError):
        return  # never got a table
    if resource.spec.deletion_policy != "Delete":
        kopf.info(
            body, reason="Retained", message=f"table {resource.table} kept (deletionPolicy Retain)"
        )
        return
    namespace = body["metadata"]["namespace"]
    try:
        try:
            database = _database(namespace, resource)
        except NotReady as problem:
            # The Secret is gone (e.g. its namespace is being deleted): use the URL this Queue
            # was last seen with, or keep the table rather than block the deletion for ever.
            remembered = _last_urls.get((namespace, resource.name))
            if remembered is None:
                kopf.warn(
                    body,
                    reason="TableKept",
                    message=f"table {resource.table} kept: cannot reach its database "
                    f"({problem.message})",
                )
                return
            database = _connect(remembered)
        database.delete_queue(resource.name, drop_table=True)
    except QueueNotFound:
        pass
    except (NotReady, DatabaseUnavailable) as error:
        raise kopf.TemporaryError(f"cannot drop table yet: {error}", delay=_delay(retry)) from None
    _last_urls.pop((namespace, resource.name), None)
    kopf.info(body, reason="Deleted", message=f"table {resource.table} dropped")


def register_timer() -> None:
    """The status timer, registered once the interval is known (set by the command line)."""
    kopf.timer(GROUP, VERSION, PLURAL, interval=SETTINGS.interval, idle=None)(observe)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.finalizer = FINALIZER
    settings.posting.level = logging.INFO
    settings.watching.server_timeout = 60
    settings.execution.max_workers = MAX_WORKERS
    try:
        kubernetes.config.load_incluster_config()  # type: ignore[no-untyped-call]
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config()  # type: ignore[no-untyped-call]
    global _api_client
    configuration = kubernetes.client.Configuration.get_default_copy()
    configuration.connection_pool_maxsize = MAX_WORKERS  # one connection per handler thread
    _api_client = kubernetes.client.ApiClient(configuration)


_api_client: Any = None


def _client() -> Any:
    """One Kubernetes client, and its connection pool, for every handler: a client per call
    costs a TLS handshake (about 20 ms of CPU), and the timer makes several calls per Queue."""
    global _api_client
    if _api_client is None:
        _api_client = kubernetes.client.ApiClient()
    return _api_client
