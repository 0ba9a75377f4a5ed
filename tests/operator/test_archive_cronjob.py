"""`spec.archive` and the CronJob the operator builds from it, as pure functions of a Queue: the
archive command of the pipeline, the Queue's Secret, the destination, Forbid."""

from __future__ import annotations

from typing import Any

import pytest

from tablequeue.errors import SpecError
from tablequeue.operator import archive_cronjob
from tablequeue.operator.conditions import condition, merge
from tablequeue.spec import QueueResource, QueueSpec

OWNER = {"apiVersion": "tablequeue.dev/v1", "kind": "Queue", "name": "orders", "uid": "u-1"}
IMAGE = "tablequeue/pipeline:0.1.0"


def archive_spec(**archive: Any) -> QueueSpec:
    fields = {"schedule": "30 3 * * *", "destination": {"url": "s3a://bucket/archive"}}
    return QueueResource.from_name(
        "orders",
        database={"secret_ref": {"name": "orders-db", "key": "dsn"}},
        archive=fields | archive,
    ).spec


def test_the_cronjob_runs_the_pipelines_archive_of_the_queue() -> None:
    spec = archive_spec(
        older_than="30d",
        statuses=["Processed", "Cancelled"],
        time_zone="Europe/Oslo",
        spark_conf={"spark.hadoop.fs.s3a.endpoint": "http://minio:9000"},
        env=[
            {
                "name": "AWS_ACCESS_KEY_ID",
                "valueFrom": {"secretKeyRef": {"name": "s3", "key": "id"}},
            }
        ],
    )
    body = archive_cronjob.cronjob("orders", "shop", spec, OWNER, IMAGE)
    assert (body["apiVersion"], body["kind"]) == ("batch/v1", "CronJob")
    assert body["metadata"]["name"] == "orders-archive"
    assert body["metadata"]["namespace"] == "shop"
    assert body["metadata"]["ownerReferences"] == [OWNER]
    assert body["metadata"]["labels"]["tablequeue.dev/queue"] == "orders"
    cron = body["spec"]
    assert (cron["schedule"], cron["timeZone"]) == ("30 3 * * *", "Europe/Oslo")
    assert cron["concurrencyPolicy"] == "Forbid"
    assert (cron["successfulJobsHistoryLimit"], cron["failedJobsHistoryLimit"]) == (3, 1)
    assert cron["suspend"] is False
    job = cron["jobTemplate"]["spec"]
    assert job["backoffLimit"] == 0  # the next run's journal finishes a run that died
    pod = job["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    [container] = pod["containers"]
    assert container["image"] == IMAGE
    assert container["args"] == [
        "python3", "-m", "tablequeue.pipeline", "archive", "orders",
        "--to", "s3a://bucket/archive", "--older-than", "30d", "--master", "local[*]",
        "--status", "Processed", "--status", "Cancelled",
        "--conf", "spark.hadoop.fs.s3a.endpoint=http://minio:9000",
    ]  # fmt: skip
    env = {e["name"]: e for e in container["env"]}
    assert env["TABLEQUEUE_DB"]["valueFrom"] == {
        "secretKeyRef": {"name": "orders-db", "key": "dsn"}
    }
    assert env["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"]["name"] == "s3"
    assert container["resources"] == archive_cronjob.DEFAULT_RESOURCES
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]  # Spark's scratch
    assert pod["volumes"] == [{"name": "tmp", "emptyDir": {}}]


def test_a_volume_claim_is_the_archive_root_and_the_queue_may_name_image_and_resources() -> None:
    resources = {"requests": {"cpu": "2", "memory": "4Gi"}}
    spec = archive_spec(
        destination={"persistentVolumeClaim": {"claimName": "archive"}},
        image="registry.example/tq/pipeline:2",
        resources=resources,
        keep_successful_jobs=0,
        keep_failed_jobs=5,
        suspend=True,
    )
    body = archive_cronjob.cronjob("orders", "shop", spec, OWNER, IMAGE)
    assert (body["spec"]["successfulJobsHistoryLimit"], body["spec"]["failedJobsHistoryLimit"]) == (
        0,
        5,
    )
    assert body["spec"]["suspend"] is True
    pod = body["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["image"] == "registry.example/tq/pipeline:2"
    assert container["resources"] == resources
    assert container["args"][5:9] == ["--to", "/archive", "--older-than", "7d"]  # the defaults
    assert {"name": "archive", "mountPath": "/archive"} in container["volumeMounts"]
    assert {"name": "archive", "persistentVolumeClaim": {"claimName": "archive"}} in pod["volumes"]
    assert pod["securityContext"]["fsGroup"] == 65532  # the image's user may write to it


def test_long_queue_names_fit_a_cronjob_name() -> None:
    name = "q" * 63
    assert archive_cronjob.cronjob_name(name) == "q" * 52
    assert archive_cronjob.cronjob_name("a" * 44 + "-b") == "a" * 44 + "-b-archi"


@pytest.mark.parametrize(
    ("archive", "problem"),
    [
        ({"schedule": "61 * * * *"}, "spec.archive.schedule: invalid cron expression '61 * * * *'"),
        ({"schedule": "* * *"}, "cron expression '* * *' has 3 fields"),
        ({"time_zone": "Mars/Olympus"}, "unknown time zone 'Mars/Olympus'"),
        ({"older_than": "forever"}, "olderThan forever archives nothing"),
        ({"older_than": "soon"}, "invalid duration 'soon'"),
        ({"statuses": ["Leased"]}, "status 'Leased' is set only by leasing"),
        ({"destination": {}}, "set exactly one of url or persistentVolumeClaim"),
        (
            {"destination": {"url": "/a", "persistentVolumeClaim": {"claimName": "b"}}},
            "set exactly one of url or persistentVolumeClaim",
        ),
        (
            {"env": [{"name": "TABLEQUEUE_DB", "value": "postgresql://x"}]},
            "TABLEQUEUE_DB comes from spec.database.secretRef",
        ),
        (
            {"keepFailedJobs": 101},
            "spec.archive.keepFailedJobs: Input should be less than or equal to 100",
        ),
    ],
)
def test_bad_archive_specs_name_the_problem(archive: dict[str, Any], problem: str) -> None:
    with pytest.raises(SpecError) as raised:
        archive_spec(**archive)
    assert problem in str(raised.value)


def test_the_archive_spec_round_trips_through_yaml_names() -> None:
    spec = archive_spec(older_than="36h")
    dumped = spec.model_dump(by_alias=True, exclude_none=True)["archive"]
    assert dumped["olderThan"] == "1d12h"
    assert dumped["destination"] == {"url": "s3a://bucket/archive"}
    assert QueueSpec.model_validate(spec.model_dump(by_alias=True)).archive == spec.archive


def test_only_a_refused_cronjob_keeps_the_queue_from_ready() -> None:
    def ready(archive: dict[str, Any]) -> tuple[str, str]:
        table = condition("TableReady", True, "TableReady")
        found = {c["type"]: c for c in merge(None, [table, archive], 1)}
        return found["Ready"]["status"], found["Ready"]["reason"]

    refused = condition("ArchiveScheduled", False, "ArchiveRefused", "the API server refused")
    assert ready(refused) == ("False", "ArchiveRefused")
    assert ready(condition("ArchiveScheduled", True, "Scheduled")) == ("True", "Reconciled")
    assert ready(condition("ArchiveScheduled", False, "NotConfigured")) == ("True", "Reconciled")
