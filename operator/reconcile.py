"""Reconciling a Queue: its table and registry row (with the default status), its worker
Deployment and, in HPA mode, its HorizontalPodAutoscaler; on deletion, its table as the
deletion policy says.

A bad spec is `Ready=False` with a reason and an Event, never a crash loop; an unreachable
database is `DatabaseReachable=False` and a temporary error retried with back-off.
"""

from __future__ import annotations

import kopf
from kubernetes.client.exceptions import ApiException

from tablequeue import metrics
from tablequeue.backoff import Backoff
from tablequeue.errors import DatabaseUnavailable, QueueNotFound, SpecError, TableQueueError
from tablequeue.spec import QueueResource

from . import builders
from .conditions import NotReady, condition, merge
from .kube import Kube
from .state import OperatorState

RETRY_BACKOFF = Backoff(first=5, cap=300, jitter=False)
"""The delay before kopf retries a handler that hit a temporary problem."""
CONFLICT_RETRIES = 5


def invalid_spec(
    body: kopf.Body, patch: kopf.Patch, status: kopf.Status, error: SpecError | ValueError
) -> kopf.PermanentError:
    """What the CRD schema cannot check: `Ready=False`, a Warning, and no retry."""
    message = str(error).splitlines()[0]
    patch.status["conditions"] = merge(
        status.get("conditions"),
        [condition("Ready", False, "InvalidSpec", message)],
        body["metadata"].get("generation"),
    )
    kopf.warn(body, reason="InvalidSpec", message=message)
    return kopf.PermanentError(message)


def apply_queue(
    state: OperatorState,
    resource: QueueResource,
    body: kopf.Body,
    patch: kopf.Patch,
    status: kopf.Status,
    retry: int,
) -> None:
    """Create or migrate the table and registry row, then the workers; report the status."""
    namespace, generation = body["metadata"]["namespace"], body["metadata"].get("generation")
    try:
        database = state.database(namespace, resource)
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
    apply_workers(state.kube, resource, body, state.settings.worker_image)
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


def _fail(
    body: kopf.Body, patch: kopf.Patch, status: kopf.Status, problem: NotReady, retry: int
) -> kopf.TemporaryError:
    labels = {"namespace": body["metadata"]["namespace"], "queue": body["metadata"]["name"]}
    metrics.operator_reconcile_errors.labels(reason=problem.reason, **labels).inc()
    patch.status["conditions"] = merge(
        status.get("conditions"), [problem.condition()], body["metadata"].get("generation")
    )
    kopf.warn(body, reason=problem.reason, message=problem.message)
    return kopf.TemporaryError(problem.message, delay=RETRY_BACKOFF.delay(retry))


def apply_workers(kube: Kube, resource: QueueResource, body: kopf.Body, worker_image: str) -> None:
    """The Deployment and, in HPA mode, its HPA. A conflict (the timer or an HPA changed the
    object between our read and our write) is retried at once with a fresh read, not left to
    kopf's one-minute back-off."""
    for attempt in range(1, CONFLICT_RETRIES + 1):
        try:
            _apply_workers_once(kube, resource, body, worker_image)
            return
        except ApiException as error:
            if error.status != 409 or attempt == CONFLICT_RETRIES:
                raise


def _apply_workers_once(
    kube: Kube, resource: QueueResource, body: kopf.Body, worker_image: str
) -> None:
    name, namespace = resource.name, body["metadata"]["namespace"]
    objects_name = builders.deployment_name(name)
    owner = builders.owner_reference(dict(body))
    mode = resource.spec.workers.autoscaling.mode
    existing = kube.deployment(objects_name, namespace)
    replicas: int | None
    if existing is not None:
        replicas = existing.spec.replicas
    else:
        replicas = resource.spec.workers.autoscaling.min_replicas if mode != "HPA" else None
    wanted = builders.deployment(name, namespace, resource.spec, owner, worker_image, replicas)
    kube.put_deployment(wanted, existing)
    if existing is None:
        kopf.info(body, reason="Workers", message=f"created Deployment {objects_name}")
    hpa = kube.horizontal_pod_autoscaler(objects_name, namespace)
    if mode == "HPA":
        wanted_hpa = builders.horizontal_pod_autoscaler(name, namespace, resource.spec, owner)
        kube.put_horizontal_pod_autoscaler(wanted_hpa, hpa)
        if hpa is None:
            message = f"created HorizontalPodAutoscaler {objects_name}"
            kopf.info(body, reason="Autoscaling", message=message)
    elif hpa is not None:
        kube.delete_horizontal_pod_autoscaler(objects_name, namespace)
        message = f"deleted HorizontalPodAutoscaler {objects_name}"
        kopf.info(body, reason="Autoscaling", message=message)


def delete_queue(
    state: OperatorState, resource: QueueResource, body: kopf.Body, retry: int
) -> None:
    """Drop the table with `deletionPolicy: Delete`, keep it with `Retain`."""
    if resource.spec.deletion_policy != "Delete":
        kopf.info(
            body, reason="Retained", message=f"table {resource.table} kept (deletionPolicy Retain)"
        )
        return
    namespace = body["metadata"]["namespace"]
    try:
        try:
            database = state.database(namespace, resource)
        except NotReady as problem:
            # The Secret is gone (e.g. its namespace is being deleted): use the URL this Queue
            # was last seen with, or keep the table rather than block the deletion for ever.
            remembered = state.databases.last_url((namespace, resource.name))
            if remembered is None:
                kopf.warn(
                    body,
                    reason="TableKept",
                    message=f"table {resource.table} kept: cannot reach its database "
                    f"({problem.message})",
                )
                return
            database = state.databases.connect(remembered)
        database.delete_queue(resource.name, drop_table=True)
    except QueueNotFound:
        pass
    except (NotReady, DatabaseUnavailable) as error:
        delay = RETRY_BACKOFF.delay(retry)
        raise kopf.TemporaryError(f"cannot drop table yet: {error}", delay=delay) from None
    state.databases.forget((namespace, resource.name))
    kopf.info(body, reason="Deleted", message=f"table {resource.table} dropped")
