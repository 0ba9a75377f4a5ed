"""Observing a Queue on the timer: fire its due schedule ticks, read its counts, export the
queue gauges, patch `status`, in `Operator` mode scale its worker Deployment (in HPA mode,
keep it off zero), and keep its worker pods' deletion cost at their messages in flight."""

from __future__ import annotations

import logging
import time
from typing import Any

import kopf
import sqlalchemy as sa
from kubernetes.client.exceptions import ApiException

from tablequeue import Database, FlowState, WorkerInfo, WorkerPresence, metrics, names, presence_of
from tablequeue.errors import DatabaseUnavailable, QueueNotFound, QueueOwnedElsewhere
from tablequeue.models import QueueStats
from tablequeue.rollup import write_minutes
from tablequeue.spec import QueueResource

from . import builders
from .conditions import (
    NotReady,
    condition,
    paused_condition,
    reconcile_refused_workers,
    written,
)
from .deletion_cost import keep_deletion_costs
from .kube import refusal
from .reconcile import hold_scaler_while_paused
from .schedules import fire_schedules, schedule_status
from .state import OperatorState

logger = logging.getLogger(__name__)
QUEUE_FIELDS = (
    "counts",
    "columns",
    "backlog",
    "oldestPendingSeconds",
    "health",
    "healthReasons",
    "effectiveDefaultStatus",
    "paused",
    "pausedAt",
    "replicas",
    "schedules",
)
"""What `status` says of the queue in the database: only of a queue the Queue owns."""


def observe_queue(
    state: OperatorState,
    resource: QueueResource,
    body: kopf.Body,
    patch: kopf.Patch,
    status: kopf.Status,
) -> None:
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    generation = body["metadata"].get("generation")
    labels = {"namespace": namespace, "queue": name}
    try:
        database = state.database(namespace, resource)
        stats, effective_default_status, schedules, workers, flow = state.databases.bounded(
            database, lambda: _fire_and_count(database, name, f"{namespace}/{name}")
        )
    except QueueOwnedElsewhere as error:
        # Its counts and schedules are another Queue's (any an older operator wrote go).
        patch.status.update(dict.fromkeys(QUEUE_FIELDS))
        _trouble(body, patch, status, NotReady("TableReady", type(error).__name__, str(error)))
        return
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
    state.gauges.export((namespace, name), stats)
    _sample_rollup(state, database, name, stats.backlog)
    refused: NotReady | None = None
    try:
        load = (stats.backlog, stats.leased, flow.paused)
        scaled = _scale(state, resource, namespace, body, *load, status)
    except ApiException as error:
        scaled = None
        message = f"the API server refused to scale the workers: {refusal(error)}"
        refused = NotReady("WorkersReady", "ScaleRefused", message)
    replicas = scaled or {"desired": 0, "ready": 0}
    present = None if workers is None else presence_of(workers)
    if workers is not None and scaled is not None and (scaled["desired"] or any(workers)):
        _keep_deletion_costs(state, namespace, name, workers)
    metrics.operator_desired_replicas.labels(**labels).set(replicas["desired"])
    gone = {kind: None for kind in status.get("counts") or {} if kind not in stats.counts}
    patch.status.update(
        {
            "counts": stats.counts | gone,  # a merge patch removes a key only when set to null
            "columns": {  # kubectl get's: 0 where `counts` has no key
                "pending": stats.counts.get(names.PENDING, 0),
                "leased": stats.counts.get(names.LEASED, 0),
                "errors": stats.counts.get(names.ERROR, 0),
            },
            "backlog": stats.backlog,
            "oldestPendingSeconds": round(stats.oldest_pending_seconds, 3),
            "health": stats.health,
            "healthReasons": stats.health_reasons,
            "effectiveDefaultStatus": effective_default_status,
            "paused": flow.paused,
            "pausedAt": flow.paused_at.isoformat() if flow.paused_at else None,
            "replicas": replicas,
            "schedules": schedules or None,  # null removes it (a merge patch)
        }
    )
    updates = [
        condition("DatabaseReachable", True, "Connected", database.shown_url),
        paused_condition(flow.paused_at),
    ]
    # A refusal reconcile reported holds until reconcile clears it (`written` makes sure; this
    # saves an Event).
    if not reconcile_refused_workers(status.get("conditions")):
        if refused is not None:
            updates.append(_warned(body, status, refused))
        elif scaled is not None:  # without a Deployment, reconcile makes it or says why not
            ready = scaled["ready"] >= scaled["desired"]
            updates.append(
                condition(
                    "WorkersReady",
                    ready,
                    "WorkersReady" if ready else "WorkersStarting",
                    f"{scaled['ready']} of {scaled['desired']} worker replicas ready"
                    + _heartbeats(present),
                )
            )
    patch.fns.append(written(updates, generation, timer=True))


def _heartbeats(present: WorkerPresence | None) -> str:
    """What `tablequeue_workers` says: worker processes heartbeating for this queue."""
    if present is None:
        return ""
    stale = f", {present.stale} stale" if present.stale else ""
    return f"; {present.live} heartbeating{stale}"


def _fire_and_count(
    database: Database, name: str, label: str
) -> tuple[QueueStats, str, list[dict[str, Any]], list[WorkerInfo] | None, FlowState]:
    """Only for the Queue resource that owns the queue (`label`): another namespace may name
    the same queue on the same database. Fire the due schedule ticks first, so that the counts
    (and the scaling) see their messages; then the counts, the effective default status, the
    schedules for `status`, the workers that heartbeat, and the pause and rate limit."""
    database.check_owner(name, label)
    queue = database.queue(name)
    fire_schedules(queue, label)
    return (
        queue.stats(),
        database.default_status_of(name),
        schedule_status(queue),
        _workers(database, name),
        database.flow_state(name),
    )


def _workers(database: Database, name: str) -> list[WorkerInfo] | None:
    """The queue's workers from their heartbeats; None when `tablequeue_workers` cannot be read
    (no right to read it): the health rule on workers and the deletion costs are skipped."""
    try:
        return database.workers(name)
    except sa.exc.DBAPIError as error:
        if error.connection_invalidated:
            raise
        return None


def _keep_deletion_costs(
    state: OperatorState, namespace: str, name: str, workers: list[WorkerInfo]
) -> None:
    """The worker pods' deletion cost (`deletion_cost`); what the API server refuses (e.g. an
    operator upgraded without its new RBAC rule on pods) is logged when it first happens, and
    never changes the Queue's conditions: only which pod goes first on scale-in depends on it."""
    key = (namespace, name)
    try:
        patched = keep_deletion_costs(state.kube, name, namespace, workers)
    except ApiException as error:
        message = refusal(error)
        if state.cost_refusals.get(key) != message:
            state.cost_refusals[key] = message
            logger.warning("[%s/%s] cannot keep the pods' deletion cost: %s", *key, message)
        return
    state.cost_refusals.pop(key, None)
    if patched:
        metrics.operator_deletion_cost_patches.labels(namespace=namespace, queue=name).inc(patched)


def _sample_rollup(state: OperatorState, database: Database, name: str, backlog: int) -> None:
    """The chart rollup's samples (backlog, highest id) of this tick, so charts have them while
    no worker runs (scaled to zero); a failure is logged, never the Queue's condition."""
    try:
        state.databases.bounded(
            database,
            lambda: write_minutes(database, name, database.queue(name).table, {}, backlog),
        )
    except (DatabaseUnavailable, QueueNotFound, sa.exc.DBAPIError) as error:
        logger.warning("cannot sample the chart rollup of %s: %s", name, str(error)[:300])


def _trouble(body: kopf.Body, patch: kopf.Patch, status: kopf.Status, problem: NotReady) -> None:
    """A condition turned False on the timer."""
    patch.fns.append(written([_warned(body, status, problem)], body["metadata"].get("generation")))


def _warned(body: kopf.Body, status: kopf.Status, problem: NotReady) -> dict[str, Any]:
    """The problem's condition, with a Warning Event and a log line when it turns, not on
    every tick."""
    previous = {c["type"]: c for c in status.get("conditions") or []}.get(problem.kind, {})
    if (previous.get("status"), previous.get("reason")) != ("False", problem.reason):
        kopf.warn(body, reason=problem.reason, message=problem.message)
        name = f"{body['metadata']['namespace']}/{body['metadata']['name']}"
        logger.warning("[%s] %s: %s", name, problem.reason, problem.message)
    return problem.condition()


def _scale(
    state: OperatorState,
    resource: QueueResource,
    namespace: str,
    body: kopf.Body,
    backlog: int,
    leased: int,
    paused: bool,
    status: kopf.Status,
) -> dict[str, Any] | None:
    """The replicas for `status.replicas` and the desired-replicas gauge, None without a
    Deployment: in Operator mode scaled to the load first; in other modes what their scaler
    set (the HPA's floor applied). Never above what the queue can use; while the queue is
    paused, the backlog does not count (and an HPA or ScaledObject is held at the minimum)."""
    kube = state.kube
    name = builders.deployment_name(resource.name)
    existing = kube.deployment(name, namespace)
    if existing is None:
        return None
    current = existing.spec.replicas or 0
    ready = (existing.status.ready_replicas or 0) if existing.status else 0
    if resource.spec.workers.autoscaling.mode != "Operator":
        # Another scaler owns the count; in HPA mode the operator keeps it off zero.
        hold_scaler_while_paused(kube, resource, body, state.settings, paused)
        wanted = builders.workers_replicas(resource.spec, current)
        if wanted != current:
            kube.scale_deployment(name, namespace, wanted)
            message = f"workers {current} -> {wanted} ({builders.HPA_FLOOR_REASON})"
            kopf.info(body, reason="Scaled", message=message)
        return {"desired": wanted, "ready": ready}
    previous = (status.get("replicas") or {}).get("lastBusy", 0.0)
    decision = builders.scale(
        resource.spec, backlog, leased, current, previous, time.time(), paused
    )
    if decision.replicas != current:
        kube.scale_deployment(name, namespace, decision.replicas)
        kopf.info(
            body,
            reason="Scaled",
            message=f"workers {current} -> {decision.replicas} "
            f"(backlog {backlog}, leased {leased}{', paused' if paused else ''})",
        )
    return {"desired": decision.replicas, "ready": ready, "lastBusy": decision.last_busy}
