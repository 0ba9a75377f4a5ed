"""The archive CronJob of a Queue with `spec.archive`, as a pure function of the Queue.

Each Job runs `python3 -m tablequeue.pipeline archive QUEUE --to ROOT --older-than ...` with
local Spark in the pipeline image (Dockerfile.pipeline); the database URL comes from the Queue's
own Secret. Never two at once (`concurrencyPolicy: Forbid`): the archive's journal recovers a run
that died (its next run finishes it), so a failed Job is not retried in place either.
"""

from __future__ import annotations

from typing import Any

from tablequeue.durations import format_duration
from tablequeue.spec import ArchiveSpec, QueueSpec

from . import builders

CONTAINER = "tablequeue-archive"
MOUNT_PATH = "/archive"
"""Where a `destination.persistentVolumeClaim` is mounted: the archive root."""
USER_ID = 65532
"""Dockerfile.pipeline's user; the pod's fsGroup, so that it may write to a volume claim."""
DEFAULT_RESOURCES = {"requests": {"cpu": "1", "memory": "1536Mi"}, "limits": {"memory": "2Gi"}}
"""Local Spark: a 1 GiB driver heap (Spark's default) beside the Python process."""


def cronjob_name(queue_name: str) -> str:
    """`<queue>-archive`, cut to the 52 characters a CronJob's name may have (its Jobs add 11)."""
    return f"{queue_name}-archive"[:52].rstrip("-.")


def labels(name: str) -> dict[str, str]:
    return builders.labels(name, app="tablequeue-archive")


def archive_root(archive: ArchiveSpec) -> str:
    destination = archive.destination
    return MOUNT_PATH if destination.url is None else destination.url


def archive_command(name: str, archive: ArchiveSpec) -> list[str]:
    """The pipeline's archive of one queue; `--db` is read from TABLEQUEUE_DB."""
    assert archive.older_than is not None, "validated: never forever"
    command = [
        "python3",
        "-m",
        "tablequeue.pipeline",
        "archive",
        name,
        "--to",
        archive_root(archive),
        "--older-than",
        format_duration(archive.older_than),
        "--master",
        "local[*]",
    ]
    for status in archive.statuses:
        command += ["--status", status]
    for key, value in sorted(archive.spark_conf.items()):
        command += ["--conf", f"{key}={value}"]
    return command


def _container(name: str, spec: QueueSpec, archive: ArchiveSpec, image: str) -> dict[str, Any]:
    assert spec.database is not None, "validated before building"
    secret = spec.database.secret_ref
    mounts = [{"name": "tmp", "mountPath": "/tmp"}]
    if archive.destination.persistent_volume_claim is not None:
        mounts.append({"name": "archive", "mountPath": MOUNT_PATH})
    return {
        "name": CONTAINER,
        "image": image,
        "args": archive_command(name, archive),
        "env": [
            {
                "name": "TABLEQUEUE_DB",
                "valueFrom": {"secretKeyRef": {"name": secret.name, "key": secret.key}},
            },
            *archive.env,
        ],
        "resources": archive.resources if archive.resources is not None else DEFAULT_RESOURCES,
        "volumeMounts": mounts,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }


def cronjob(
    name: str, namespace: str, spec: QueueSpec, owner: dict[str, Any], default_image: str
) -> dict[str, Any]:
    """The CronJob that archives the queue on `spec.archive.schedule`."""
    archive = spec.archive
    assert archive is not None, "only for a Queue with spec.archive"
    volumes: list[dict[str, Any]] = [{"name": "tmp", "emptyDir": {}}]
    claim = archive.destination.persistent_volume_claim
    if claim is not None:
        volumes.append(
            {"name": "archive", "persistentVolumeClaim": {"claimName": claim.claim_name}}
        )
    pod = {
        "metadata": {"labels": labels(name)},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": {"runAsUser": USER_ID, "runAsGroup": USER_ID, "fsGroup": USER_ID},
            "containers": [_container(name, spec, archive, archive.image or default_image)],
            "volumes": volumes,
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": cronjob_name(name),
            "namespace": namespace,
            "labels": labels(name),
            "ownerReferences": [owner],
        },
        "spec": {
            "schedule": archive.schedule,
            "timeZone": archive.time_zone,
            "concurrencyPolicy": "Forbid",
            "suspend": archive.suspend,
            "successfulJobsHistoryLimit": archive.keep_successful_jobs,
            "failedJobsHistoryLimit": archive.keep_failed_jobs,
            "jobTemplate": {
                "metadata": {"labels": labels(name)},
                "spec": {"backoffLimit": 0, "template": pod},
            },
        },
    }
