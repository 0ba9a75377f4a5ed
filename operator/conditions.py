"""Status conditions of a Queue, keeping each condition's last transition time, and the
problem (`NotReady`) that turns one of them False."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import kopf

TYPES = ("Ready", "TableReady", "DatabaseReachable", "WorkersReady", "Paused", "ArchiveScheduled")


def condition(kind: str, ok: bool, reason: str, message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": "True" if ok else "False", "reason": reason, "message": message}


def merge(
    previous: list[dict[str, Any]] | None, updates: list[dict[str, Any]], generation: int | None
) -> list[dict[str, Any]]:
    """New conditions replace old ones of the same type; the transition time moves only when the
    status changes. Ready is True only once the table is applied, the database reachable and
    nothing refused the workers (see `_not_ready`)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    by_type = {c["type"]: c for c in previous or []}
    for update in updates:
        old = by_type.get(update["type"])
        changed = old is None or old.get("status") != update["status"]
        by_type[update["type"]] = {
            **update,
            "lastTransitionTime": now if changed else old.get("lastTransitionTime", now),  # type: ignore[union-attr]
            "observedGeneration": generation,
        }
    if "Ready" not in {u["type"] for u in updates}:
        blocking = _not_ready(by_type)
        ready = (
            condition("Ready", False, blocking["reason"], blocking.get("message", ""))
            if blocking
            else condition("Ready", True, "Reconciled", "table, registry and workers are in place")
        )
        return merge(list(by_type.values()), [ready], generation)
    return [by_type[t] for t in TYPES if t in by_type]


WORKERS_OBSERVED = ("WorkersReady", "WorkersStarting", "ScaleRefused")
"""The WorkersReady reasons the timer writes from the Deployment it reads, and replaces on each
tick. Any other False one is reconcile's (the API server refused a worker object, KEDA is
missing): the timer leaves it, and it holds until a reconcile puts the workers in place."""


def written(
    updates: list[dict[str, Any]],
    generation: int | None,
    *,
    timer: bool = False,
    workers_applied: bool = False,
) -> kopf.PatchFn:
    """The updates merged into the conditions of the freshest body, for kopf's `patch.fns`
    (applied as a JSON patch guarded by the resourceVersion, retried when it changed): the
    timer and reconcile write at the same time, and a whole list computed from an older body
    would undo the other's conditions (e.g. drop TableReady for good).

    `timer`: its WorkersReady never replaces a refusal reconcile reported. `workers_applied`:
    reconcile put the workers in place, which ends such a refusal (the timer says how many are
    ready)."""

    def apply(body: kopf.RawBody) -> None:
        status = body.get("status") or {}
        previous = status.get("conditions")
        chosen = list(updates)
        if reconcile_refused_workers(previous):
            if timer:
                chosen = [u for u in chosen if u["type"] != "WorkersReady"]
            if workers_applied:
                chosen.append(
                    condition("WorkersReady", False, "WorkersStarting", "workers applied")
                )
        body["status"] = status | {"conditions": merge(previous, chosen, generation)}

    return apply


def reconcile_refused_workers(conditions: list[dict[str, Any]] | None) -> bool:
    found = {c["type"]: c for c in conditions or []}.get("WorkersReady", {})
    return found.get("status") == "False" and found.get("reason") not in WORKERS_OBSERVED


def _not_ready(by_type: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """What keeps a Queue from Ready. A status without TableReady is not Ready either: the
    timer may write before the first reconcile does."""
    for kind in ("TableReady", "DatabaseReachable"):
        if kind in by_type and by_type[kind]["status"] != "True":
            return by_type[kind]
    workers = by_type.get("WorkersReady")
    if workers and workers["status"] != "True" and workers["reason"] != "WorkersStarting":
        return workers
    archive = by_type.get("ArchiveScheduled")
    if archive and archive["reason"] == "ArchiveRefused":
        return archive
    if "TableReady" not in by_type:
        return condition("Ready", False, "Reconciling", "the table is not applied yet")
    return None


def paused_condition(paused_at: datetime | None) -> dict[str, Any]:
    """`Paused`: True while workers lease nothing (`kubectl wait --for=condition=Paused`)."""
    if paused_at is None:
        return condition("Paused", False, "Running", "workers lease messages")
    since = paused_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return condition(
        "Paused",
        True,
        "Paused",
        f"workers lease nothing since {since}; `tablequeue queue resume` or a change of "
        "spec.paused resumes it",
    )


class NotReady(Exception):
    """A condition to report as False (with its reason) and a temporary error to retry."""

    def __init__(self, kind: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.reason, self.message = kind, reason, message

    def condition(self) -> dict[str, Any]:
        return condition(self.kind, False, self.reason, self.message)
