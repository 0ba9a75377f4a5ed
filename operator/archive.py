"""Keeping a Queue's archive CronJob as `spec.archive` says: created, replaced when the spec
changes, deleted when the field goes. Its condition `ArchiveScheduled` says which."""

from __future__ import annotations

from typing import Any

import kopf
import kubernetes
import pydantic
from kubernetes.client.exceptions import ApiException

from tablequeue.spec import QueueResource

from . import archive_cronjob, builders
from .conditions import NotReady, condition
from .kube import Kube, invalid, refusal

CONDITION = "ArchiveScheduled"
CONFLICT_RETRIES = 5
REFUSED = "ArchiveRefused"
"""The reason of a CronJob the API server (or the client) refused; it keeps the Queue from
Ready until a reconcile puts the CronJob in place."""


def _read(batch: kubernetes.client.BatchV1Api, name: str, namespace: str) -> Any:
    try:
        return batch.read_namespaced_cron_job(name, namespace)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def apply_archive(
    kube: Kube, resource: QueueResource, body: kopf.Body, default_image: str
) -> dict[str, Any] | None:
    """Put the CronJob in place (or remove it); the `ArchiveScheduled` condition to write, None
    for a Queue that has no archive and had none. A conflict (the object changed between our
    read and our write) is retried at once with a fresh read; a refusal is `NotReady`
    (ArchiveRefused)."""
    name = archive_cronjob.cronjob_name(resource.name)
    for attempt in range(1, CONFLICT_RETRIES + 1):
        try:
            return _apply_once(kube, resource, body, default_image)
        except ApiException as error:
            if error.status != 409 or attempt == CONFLICT_RETRIES:
                message = f"the API server refused the archive CronJob {name}: {refusal(error)}"
                raise NotReady(CONDITION, REFUSED, message) from None
        except pydantic.ValidationError as error:
            message = f"the archive CronJob {name} is invalid: {invalid(error)}"
            raise NotReady(CONDITION, REFUSED, message) from None
    raise AssertionError("unreachable: the last attempt returns or raises")


def _apply_once(
    kube: Kube, resource: QueueResource, body: kopf.Body, default_image: str
) -> dict[str, Any] | None:
    namespace = body["metadata"]["namespace"]
    name = archive_cronjob.cronjob_name(resource.name)
    batch = kubernetes.client.BatchV1Api(kube.client)
    archive = resource.spec.archive
    existing = _read(batch, name, namespace)
    if archive is None:
        if existing is None:
            return None
        batch.delete_namespaced_cron_job(name, namespace, propagation_policy="Background")
        kopf.info(body, reason="Archive", message=f"deleted CronJob {name}")
        return condition(CONDITION, False, "NotConfigured", "no spec.archive: no CronJob")
    owner = builders.owner_reference(dict(body))
    wanted: Any = archive_cronjob.cronjob(  # the client takes plain dicts as bodies
        resource.name, namespace, resource.spec, owner, default_image
    )
    if existing is None:
        batch.create_namespaced_cron_job(namespace, wanted)
        kopf.info(body, reason="Archive", message=f"created CronJob {name}")
    else:
        wanted["metadata"]["resourceVersion"] = existing.metadata.resource_version
        batch.replace_namespaced_cron_job(name, namespace, wanted)
    schedule = f"{archive.schedule} ({archive.time_zone})"
    return condition(CONDITION, True, "Scheduled", f"CronJob {name} archives on {schedule}")
