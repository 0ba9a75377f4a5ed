"""The spark-submit command of a pipeline job on Kubernetes: every setting is one the pinned
pyspark knows, with a value it takes; and spark-submit itself, run against the real test API
server in cluster mode, makes a driver pod of the image, ServiceAccount and resources asked for,
with the database URL from the Secret and nowhere in the pod or Spark's configuration.

(No kubelet runs here: the driver pod is made, never started, so no executor pod is asked for.)
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tablequeue.errors import InvalidInput
from tablequeue.pipeline.on_kubernetes import IMAGE_MAIN, KubernetesJob, submit_command
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import apply, secret
from tests.support.kube.spark_submit import spark_submit
from tests.support.waiting import wait_until

JOB = KubernetesJob(
    image="registry.example/tablequeue/pipeline:0.1.0",
    namespace="batch",
    service_account="tablequeue-pipeline",
    database_secret="queues-db",
    database_key="dsn",
    executors=4,
    executor_cores=2,
    executor_memory="2g",
    driver_memory="1536m",
)
ARGUMENTS = ["archive", "orders", "--to", "s3a://bucket/archive", "--older-than", "30d"]


def conf_of(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, part in enumerate(command) if part == "--conf"]
    return dict(pair.split("=", 1) for pair in pairs)


def test_the_command_runs_the_pipeline_in_cluster_mode_with_the_url_from_the_secret() -> None:
    command = submit_command(JOB, ARGUMENTS)
    assert command[:7] == [
        "spark-submit",
        "--master",
        "k8s://https://kubernetes.default.svc",
        "--deploy-mode",
        "cluster",
        "--name",
        "tablequeue-pipeline",
    ]
    assert command[-7:] == [IMAGE_MAIN, *ARGUMENTS]
    conf = conf_of(command)
    assert conf == JOB.conf()
    assert conf["spark.kubernetes.driver.secretKeyRef.TABLEQUEUE_DB"] == "queues-db:dsn"
    assert conf["spark.kubernetes.executor.secretKeyRef.TABLEQUEUE_DB"] == "queues-db:dsn"
    assert (conf["spark.executor.instances"], conf["spark.executor.cores"]) == ("4", "2")


def test_extra_settings_come_after_the_jobs_own_and_win() -> None:
    job = dataclasses.replace(
        JOB,
        extra_conf={
            "spark.kubernetes.executor.request.cores": "500m",
            "spark.executor.memory": "3g",
        },
    )
    command = submit_command(job, ARGUMENTS)
    conf = conf_of(command)
    assert conf["spark.kubernetes.executor.request.cores"] == "500m"
    assert conf["spark.executor.memory"] == "3g"  # over the job's executor_memory
    assert command.count("spark.executor.memory=3g") == 1
    assert "spark.executor.memory=2g" not in command


@pytest.mark.parametrize("argument", ["--db", "--db=postgresql://app:secret@db/app"])
def test_the_database_url_may_not_be_an_argument(argument: str) -> None:
    with pytest.raises(InvalidInput, match="comes from its Secret"):
        submit_command(JOB, ["archive", argument, "--to", "/archive"])


def test_every_setting_is_one_the_pinned_pyspark_knows(spark: SparkSession) -> None:
    """Each key is a configuration entry of Spark's (core, or its Kubernetes module), or one of
    the Kubernetes module's prefixes; each value converts to the entry's type."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    kubernetes = jvm.org.apache.spark.deploy.k8s.Config
    kubernetes.KUBERNETES_NAMESPACE()  # loads the module's entries, which registers them
    entries = jvm.org.apache.spark.internal.config.ConfigEntry
    prefixes = (
        kubernetes.KUBERNETES_DRIVER_SECRET_KEY_REF_PREFIX(),
        kubernetes.KUBERNETES_EXECUTOR_SECRET_KEY_REF_PREFIX(),
    )
    for key, value in JOB.conf().items():
        if key.startswith(prefixes):
            name, _, rest = value.partition(":")
            assert name and rest, f"{key}: Spark reads SECRET:KEY"
            continue
        entry = entries.findEntry(key)
        assert entry is not None, f"{key} is not a setting of pyspark {spark.version}"
        entry.valueConverter().apply(value)  # raises for a value of the wrong type
    unknown = entries.findEntry("spark.kubernetes.no.such.setting")
    assert unknown is None  # the check can fail


@pytest.mark.timeout(300)
def test_spark_submit_makes_the_driver_pod_on_a_real_api_server(
    kube: ControlPlane, namespace: str, postgres_url: str, tmp_path: Path
) -> None:
    # As docs/guides/pipeline.md sets it up (the Secret as the other tests make theirs).
    kube.kubectl("create", "serviceaccount", "tablequeue-pipeline", "-n", namespace)
    kube.kubectl(
        "create", "rolebinding", "tablequeue-pipeline", "--clusterrole=edit",
        f"--serviceaccount={namespace}:tablequeue-pipeline", "-n", namespace,
    )  # fmt: skip
    apply(kube, secret("queues-db", namespace, postgres_url))
    job = KubernetesJob(
        image="localhost/tablequeue-pipeline:test",
        namespace=namespace,
        service_account="tablequeue-pipeline",
        database_secret="queues-db",
        api_server=kube.server,
        name="tq-archive",
        executors=3,
        driver_cores=1,
        driver_memory="1g",
    )
    command = submit_command(job, ["archive", "orders", "--to", "/archive"])
    # No waiting for a pod no kubelet starts.
    submitted = spark_submit(
        kube,
        namespace,
        "tablequeue-pipeline",
        command,
        tmp_path,
        "spark.kubernetes.submission.waitAppCompletion=false",
        timeout=240,
    )
    assert submitted.returncode == 0, submitted.stderr[-6000:]

    def driver() -> dict[str, Any] | None:
        pods = kube.kubectl_json("get", "pods", "-n", namespace, "-l", "spark-role=driver")
        return pods["items"][0] if pods["items"] else None

    pod = wait_until(driver, timeout=60)
    assert pod is not None
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "tablequeue-pipeline"
    [container] = spec["containers"]
    assert container["image"] == "localhost/tablequeue-pipeline:test"
    env = {e["name"]: e for e in container["env"]}
    assert env["TABLEQUEUE_DB"]["valueFrom"] == {
        "secretKeyRef": {"name": "queues-db", "key": "url"}
    }
    assert container["args"][0] == "driver"  # the image's entrypoint runs spark-submit
    assert any(arg.endswith("/tablequeue/pipeline/__main__.py") for arg in container["args"])
    assert container["resources"]["requests"]["cpu"] == "1"
    assert container["resources"]["limits"]["memory"].endswith("Mi")  # 1g plus Spark's overhead
    # The configuration Spark hands the driver (a ConfigMap): the executors' Secret and count.
    maps = kube.kubectl_json("get", "configmaps", "-n", namespace)["items"]
    properties = "".join(text for item in maps for text in (item.get("data") or {}).values())
    # (Java's properties format may write the colon as \:)
    assert re.search(
        r"^spark\.kubernetes\.executor\.secretKeyRef\.TABLEQUEUE_DB=queues-db\\?:url$",
        properties,
        re.M,
    ), properties
    assert "spark.executor.instances=3" in properties
    whole = json.dumps([pod, maps])
    assert postgres_url not in whole and "TABLEQUEUE_DB=postgresql" not in whole
