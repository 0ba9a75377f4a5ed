"""Reconciling a Queue: its table and registry row (with the default status), its worker
Deployment and what scales it (an HPA in HPA mode, KEDA's ScaledObject and TriggerAuthentication
in KEDA mode), its archive CronJob (`spec.archive`); on deletion, its table as the deletion
policy says.

A bad spec is `Ready=False` with a reason and an Event, never a crash loop; an unreachable
database is `DatabaseReachable=False` and a temporary error retried with back-off.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf
import pydantic
from kubernetes.client.exceptions import ApiException

from tablequeue import metrics
from tablequeue.backoff import Backoff
from tablequeue.errors import DatabaseUnavailable, QueueNotFound, SpecError, TableQueueError
from tablequeue.spec import QueueResource

from . import archive, builders, keda
from .conditions import NotReady, condition, written
from .kube import Kube, invalid, refusal
from .state import OperatorState, Settings

logger = logging.getLogger(__name__)

RETRY_BACKOFF = Backoff(first=5, cap=300, jitter=False)
"""The delay before kopf retries a handler that hit a temporary problem."""
CONFLICT_RETRIES = 5
KEDA_AUTHENTICATIONS = "triggerauthentications"
KEDA_SCALED_OBJECTS = "scaledobjects"


def invalid_spec(
    body: kopf.Body,
    patch: kopf.Patch,
    error: SpecError | ValueError,
    reason: str = "InvalidSpec",
) -> kopf.PermanentError:
    """What the CRD schema cannot check, or the operator refuses (`TooManyReplicas`):
    `Ready=False`, a Warning, and no retry."""
    message = str(error).splitlines()[0]
    patch.fns.append(
        written([condition("Ready", False, reason, message)], body["metadata"].get("generation"))
    )
    kopf.warn(body, reason=reason, message=message)
    return kopf.PermanentError(message)


def apply_queue(
    state: OperatorState,
    resource: QueueResource,
    body: kopf.Body,
    patch: kopf.Patch,
    retry: int,
) -> None:
    """Create or migrate the table and registry row, then the workers; report the status."""
    namespace, generation = body["metadata"]["namespace"], body["metadata"].get("generation")
    try:
        database = state.database(namespace, resource)
        try:
            owner = f"{namespace}/{resource.name}"
            # Never wait for another apply's index builds: report it and retry later.
            outcome, flow = state.databases.bounded(
                database,
                lambda: (
                    database.apply(resource, owner, index_wait_seconds=0),
                    database.flow_state(resource.name),
                ),
            )
        except DatabaseUnavailable as error:
            raise NotReady("DatabaseReachable", "DatabaseUnavailable", str(error)) from None
        except TableQueueError as error:
            raise NotReady("TableReady", type(error).__name__, str(error)) from None
    except NotReady as problem:
        raise _fail(body, patch, problem, retry) from None
    if outcome != "unchanged":
        kopf.info(body, reason="Table", message=f"table {resource.table} {outcome}")
    for text in resource.spec.warnings():
        logger.warning("[%s/%s] %s", namespace, resource.name, text)
        kopf.warn(body, reason="SpecWarning", message=text)
    url = state.databases.last_url((namespace, resource.name))
    assert url is not None, "state.database remembers it"
    in_place = [
        condition("DatabaseReachable", True, "Connected", database.shown_url),
        condition("TableReady", True, "TableReady", f"table {resource.table}, {outcome}"),
    ]
    try:
        apply_workers(state.kube, resource, body, state.settings, url, flow.paused)
        scheduled = archive.apply_archive(state.kube, resource, body, state.settings.archive_image)
    except NotReady as problem:
        raise _fail(body, patch, problem, retry, in_place) from None
    if scheduled is not None:
        in_place.append(scheduled)
    patch.status["observedGeneration"] = generation
    try:
        default_status = state.databases.bounded(
            database, lambda: database.default_status_of(resource.name)
        )
    except DatabaseUnavailable as error:
        unavailable = NotReady("DatabaseReachable", "DatabaseUnavailable", str(error))
        raise _fail(body, patch, unavailable, retry) from None
    patch.status["effectiveDefaultStatus"] = default_status
    patch.fns.append(written(in_place, generation, workers_applied=True))


def _fail(
    body: kopf.Body,
    patch: kopf.Patch,
    problem: NotReady,
    retry: int,
    done: list[dict[str, Any]] | None = None,
) -> kopf.TemporaryError:
    """The problem's condition (and those of the steps `done` before it), a Warning, a retry."""
    labels = {"namespace": body["metadata"]["namespace"], "queue": body["metadata"]["name"]}
    metrics.operator_reconcile_errors.labels(reason=problem.reason, **labels).inc()
    patch.fns.append(
        written([*(done or []), problem.condition()], body["metadata"].get("generation"))
    )
    kopf.warn(body, reason=problem.reason, message=problem.message)
    return kopf.TemporaryError(problem.message, delay=RETRY_BACKOFF.delay(retry))


def apply_workers(
    kube: Kube,
    resource: QueueResource,
    body: kopf.Body,
    settings: Settings,
    url: str,
    paused: bool = False,
) -> None:
    """The Deployment and what scales it in the Queue's mode: an HPA, or KEDA's ScaledObject
    and TriggerAuthentication, held at the minimum while the queue is `paused` (at runtime or
    by its spec); those of other modes are deleted. A conflict (the timer or an
    autoscaler changed the object between our read and our write) is retried at once with a
    fresh read, not left to kopf's one-minute back-off; any other refusal of the API server (or
    of the client, which checks bodies first) is `WorkersReady=False` (`WorkersRefused`, with
    its message)."""
    if resource.spec.workers.autoscaling.mode == "KEDA":
        problem = keda.connection_problem(url)
        if problem is not None:
            raise NotReady("WorkersReady", "KEDAUnsupportedDatabase", problem)
    for attempt in range(1, CONFLICT_RETRIES + 1):
        try:
            _apply_workers_once(kube, resource, body, settings, paused)
            return
        except ApiException as error:
            if error.status != 409 or attempt == CONFLICT_RETRIES:
                message = f"the API server refused a worker object: {refusal(error)}"
                raise NotReady("WorkersReady", "WorkersRefused", message) from None
        except pydantic.ValidationError as error:
            message = f"a worker object is invalid: {invalid(error)}"
            raise NotReady("WorkersReady", "WorkersRefused", message) from None


def _apply_workers_once(
    kube: Kube, resource: QueueResource, body: kopf.Body, settings: Settings, paused: bool
) -> None:
    name, namespace, spec = resource.name, body["metadata"]["namespace"], resource.spec
    objects_name = builders.deployment_name(name)
    owner = builders.owner_reference(dict(body))
    mode = spec.workers.autoscaling.mode
    existing = kube.deployment(objects_name, namespace)
    current = None if existing is None else (existing.spec.replicas or 0)
    replicas = builders.workers_replicas(spec, current)
    wanted = builders.deployment(name, namespace, spec, owner, settings.worker_image, replicas)
    kube.put_deployment(wanted, existing)
    if existing is None:
        kopf.info(body, reason="Workers", message=f"created Deployment {objects_name}")
    elif current != replicas:
        message = f"workers {current} -> {replicas} ({builders.HPA_FLOOR_REASON})"
        kopf.info(body, reason="Scaled", message=message)
    # The scaler of the previous mode goes first: two scalers on one Deployment fight (and
    # KEDA refuses to make its HPA while another HPA targets the Deployment).
    if mode == "KEDA":
        _apply_hpa(kube, resource, body, namespace, owner, paused)
        _apply_keda(kube, resource, body, namespace, owner, settings.interval, paused)
    else:
        _apply_keda(kube, resource, body, namespace, owner, settings.interval, paused)
        _apply_hpa(kube, resource, body, namespace, owner, paused)


def _apply_hpa(
    kube: Kube,
    resource: QueueResource,
    body: kopf.Body,
    namespace: str,
    owner: dict[str, Any],
    paused: bool,
) -> None:
    objects_name = builders.deployment_name(resource.name)
    hpa = kube.horizontal_pod_autoscaler(objects_name, namespace)
    if resource.spec.workers.autoscaling.mode == "HPA":
        wanted = builders.horizontal_pod_autoscaler(
            resource.name, namespace, resource.spec, owner, paused
        )
        kube.put_horizontal_pod_autoscaler(wanted, hpa)
        if hpa is None:
            _note(body, f"created HorizontalPodAutoscaler {objects_name}")
    elif hpa is not None:
        kube.delete_horizontal_pod_autoscaler(objects_name, namespace)
        _note(body, f"deleted HorizontalPodAutoscaler {objects_name}")


def _apply_keda(
    kube: Kube,
    resource: QueueResource,
    body: kopf.Body,
    namespace: str,
    owner: dict[str, Any],
    interval: float,
    paused: bool,
) -> None:
    name, spec = resource.name, resource.spec
    objects_name = builders.deployment_name(name)
    wanted = {
        KEDA_AUTHENTICATIONS: keda.trigger_authentication(name, namespace, spec, owner),
        KEDA_SCALED_OBJECTS: keda.scaled_object(name, namespace, spec, owner, interval, paused),
    }
    keep = resource.spec.workers.autoscaling.mode == "KEDA"
    # Created authentication first, deleted scaled object first: never a trigger without it.
    for plural in wanted if keep else reversed(wanted):
        existing = kube.keda_object(plural, objects_name, namespace)
        kind = wanted[plural]["kind"]
        if keep:
            try:
                kube.put_keda_object(plural, wanted[plural], existing)
            except ApiException as error:
                if error.status == 404:  # the resource type, not the object: no KEDA CRDs
                    raise NotReady(
                        "WorkersReady", "KEDANotInstalled", f"KEDA's {kind} CRD is not installed"
                    ) from None
                raise
            if existing is None:
                _note(body, f"created {kind} {objects_name}")
        elif existing is not None:
            kube.delete_keda_object(plural, objects_name, namespace)
            _note(body, f"deleted {kind} {objects_name}")


def hold_scaler_while_paused(
    kube: Kube, resource: QueueResource, body: kopf.Body, settings: Settings, paused: bool
) -> None:
    """The timer's half of a runtime pause in HPA and KEDA modes: the HPA's maxReplicas, or the
    ScaledObject's paused-replicas annotation, follows the queue's pause within one interval
    (reconcile writes them only when the spec changes). Nothing is written while they agree; a
    conflict (the object changed since it was read) is left to the next tick."""
    mode = resource.spec.workers.autoscaling.mode
    namespace = body["metadata"]["namespace"]
    objects_name = builders.deployment_name(resource.name)
    owner = builders.owner_reference(dict(body))
    try:
        if mode == "HPA":
            hpa = kube.horizontal_pod_autoscaler(objects_name, namespace)
            wanted = builders.horizontal_pod_autoscaler(
                resource.name, namespace, resource.spec, owner, paused
            )
            if hpa is not None and hpa.spec.max_replicas != wanted["spec"]["maxReplicas"]:
                kube.put_horizontal_pod_autoscaler(wanted, hpa)
                _note(body, _pause_note("HorizontalPodAutoscaler", objects_name, paused))
        elif mode == "KEDA":
            existing = kube.keda_object(KEDA_SCALED_OBJECTS, objects_name, namespace)
            wanted = keda.scaled_object(
                resource.name, namespace, resource.spec, owner, settings.interval, paused
            )
            if existing is not None and _paused_replicas(existing) != _paused_replicas(wanted):
                kube.put_keda_object(KEDA_SCALED_OBJECTS, wanted, existing)
                _note(body, _pause_note("ScaledObject", objects_name, paused))
    except ApiException as error:
        if error.status != 409:
            raise


def _paused_replicas(scaled_object: dict[str, Any]) -> str | None:
    annotations = scaled_object["metadata"].get("annotations") or {}
    return annotations.get(keda.PAUSED_REPLICAS)


def _pause_note(kind: str, name: str, paused: bool) -> str:
    return f"{kind} {name} {'held at the minimum: paused' if paused else 'scaling again: resumed'}"


def _note(body: kopf.Body, message: str) -> None:
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
    owner = f"{namespace}/{resource.name}"
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
        deleted = state.databases.bounded(
            database, lambda: database.delete_queue(resource.name, drop_table=True, owner=owner)
        )
        if not deleted:
            kopf.warn(
                body,
                reason="TableKept",
                message=f"table {resource.table} kept: the database does not record this Queue "
                f"as the owner of queue {resource.name} (another namespace's, or made before "
                "owners were recorded)",
            )
            state.databases.forget((namespace, resource.name))
            return
    except QueueNotFound:
        pass
    except (NotReady, DatabaseUnavailable) as error:
        delay = RETRY_BACKOFF.delay(retry)
        raise kopf.TemporaryError(f"cannot drop table yet: {error}", delay=delay) from None
    state.databases.forget((namespace, resource.name))
    kopf.info(body, reason="Deleted", message=f"table {resource.table} dropped")
