"""The kopf handlers, thin: read the Queue and hand it to `reconcile` or `observe`.

- login: the Kubernetes client's credentials, for kopf's own API calls;
- startup: kopf's settings and the Kubernetes client; cleanup: release clients and databases;
- create/update/resume: `reconcile.apply_queue`;
- a timer: `observe.observe_queue`;
- delete (through kopf's finalizer): `reconcile.delete_queue`.
These three run on their namespace's own threads (`lanes`), awaited by kopf's event loop, so
that one tenant's silent databases never hold another tenant's Queues. Every handler gets the
operator's `OperatorState` as kopf's `memo`. The handler ids (function
names) are kept stable: kopf writes them into each Queue's annotations and log lines.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf

from tablequeue.errors import SpecError
from tablequeue.spec import QueueResource, validate_queue

from .crd import GROUP, PLURAL, VERSION
from .kube import Kube
from .observe import observe_queue
from .reconcile import apply_queue, delete_queue, invalid_spec
from .state import OperatorState, OverLimit

FINALIZER = "tablequeue.dev/finalizer"
MAX_WORKERS = 20
"""Threads of kopf's own pool (its synchronous callbacks) and connections to the API server
kept in the pool (more are opened when the namespaces' lanes need them)."""


def registry(interval: float) -> kopf.OperatorRegistry:
    """Every handler of the operator; the timer observes each Queue every `interval` seconds."""
    registry = kopf.OperatorRegistry()
    # kopf's own API calls log in as the Kubernetes client does (in-cluster, else kubeconfig);
    # only kopf's default registry has that login built in.
    kopf.on.login(registry=registry)(kopf.login_via_client)
    kopf.on.startup(registry=registry)(configure)
    kopf.on.cleanup(registry=registry)(release)
    for on in (kopf.on.resume, kopf.on.create, kopf.on.update):
        on(GROUP, VERSION, PLURAL, registry=registry)(reconcile)
    kopf.timer(GROUP, VERSION, PLURAL, interval=interval, idle=None, registry=registry)(observe)
    kopf.on.delete(GROUP, VERSION, PLURAL, registry=registry)(delete)
    return registry


def namespace_of(body: kopf.Body) -> str:
    namespace: str = body["metadata"]["namespace"]
    return namespace


def queue_resource(body: kopf.Body) -> QueueResource:
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


def configure(settings: kopf.OperatorSettings, memo: OperatorState, **_: Any) -> None:
    settings.persistence.finalizer = FINALIZER
    settings.posting.level = logging.INFO
    settings.watching.server_timeout = 60
    settings.execution.max_workers = MAX_WORKERS
    # A Queue deleted while its timer runs keeps its finalizer until kopf sees the timer exit:
    # check every second, not kopf's 60 s (the timer's tick ends within the database bound).
    settings.background.cancellation_polling = 1
    memo.kube_client = Kube.from_environment(connections=MAX_WORKERS)


def release(memo: OperatorState, **_: Any) -> None:
    memo.close()


async def reconcile(
    body: kopf.Body, patch: kopf.Patch, retry: int, memo: OperatorState, **_: Any
) -> None:
    await memo.lanes.run(namespace_of(body), lambda: _reconcile(body, patch, retry, memo))


def _reconcile(body: kopf.Body, patch: kopf.Patch, retry: int, memo: OperatorState) -> None:
    try:
        resource = queue_resource(body)
        memo.settings.check(resource.spec)
    except OverLimit as error:
        raise invalid_spec(body, patch, error, "TooManyReplicas") from None
    except (SpecError, ValueError) as error:
        raise invalid_spec(body, patch, error) from None
    apply_queue(memo, resource, body, patch, retry)


async def observe(
    body: kopf.Body, patch: kopf.Patch, status: kopf.Status, memo: OperatorState, **_: Any
) -> None:
    await memo.lanes.run(namespace_of(body), lambda: _observe(body, patch, status, memo))


def _observe(body: kopf.Body, patch: kopf.Patch, status: kopf.Status, memo: OperatorState) -> None:
    if body["metadata"].get("deletionTimestamp"):
        return  # being deleted: no status to keep, and its gauges are gone for good
    try:
        resource = queue_resource(body)
        memo.settings.check(resource.spec)
    except (SpecError, ValueError):
        return  # reported by reconcile
    observe_queue(memo, resource, body, patch, status)


async def delete(body: kopf.Body, retry: int, memo: OperatorState, **_: Any) -> None:
    await memo.lanes.run(namespace_of(body), lambda: _delete(body, retry, memo))


def _delete(body: kopf.Body, retry: int, memo: OperatorState) -> None:
    memo.gauges.forget((body["metadata"]["namespace"], body["metadata"]["name"]))
    try:
        resource = queue_resource(body)
    except (SpecError, ValueError):
        return  # never got a table
    delete_queue(memo, resource, body, retry)
