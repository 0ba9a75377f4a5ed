"""spark-submit in cluster mode against the node's cluster (tests/deploy/test_pods.py): the command
`tablequeue.pipeline.on_kubernetes` writes, run from this machine as docs/guides/pipeline.md
says, its driver and executor pods run by the kubelet from the pipeline image."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from tablequeue.pipeline.on_kubernetes import KubernetesJob, submit_command
from tests.support.kube.spark_submit import spark_submit

from .pods import Cluster

SERVICE_ACCOUNT = "tablequeue-pipeline"


def allow_jobs(cluster: Cluster, namespace: str) -> None:
    """The driver's ServiceAccount, as the guide makes it: it creates the executor pods."""
    cluster.plane.kubectl("create", "serviceaccount", SERVICE_ACCOUNT, "-n", namespace)
    cluster.plane.kubectl(
        "create", "rolebinding", SERVICE_ACCOUNT, "--clusterrole=edit",
        f"--serviceaccount={namespace}:{SERVICE_ACCOUNT}", "-n", namespace,
    )  # fmt: skip


def this_cluster(cluster: Cluster) -> dict[str, str]:
    """What this test cluster needs beyond a real one: it has no cluster DNS, so the driver
    reaches the API server at the `kubernetes` Service's address (not kubernetes.default.svc;
    the executors reach the driver at its pod's address, Spark's default); its two cores fit
    three JVMs only with CPU requests below a core."""
    service = cluster.plane.kubectl_json("get", "service", "kubernetes", "-n", "default")
    return {
        "spark.kubernetes.driver.master": f"https://{service['spec']['clusterIP']}:443",
        "spark.kubernetes.executor.useDriverPodIP": "true",
        "spark.kubernetes.driver.request.cores": "250m",
        "spark.kubernetes.executor.request.cores": "250m",
        "spark.kubernetes.executor.deleteOnTermination": "false",  # counted afterwards
        "spark.ui.enabled": "false",
    }


def run_job(
    cluster: Cluster, job: KubernetesJob, arguments: list[str], work: Path
) -> tuple[Any, list[dict[str, Any]]]:
    """Submit the job, wait for its driver to end; (the driver's last JSON line, parsed; its
    executor pods). Fails with the driver's log when it does not succeed."""
    plane, namespace = cluster.plane, job.namespace
    driver = f"{job.name}-driver"
    job = dataclasses.replace(
        job, extra_conf={**job.extra_conf, "spark.kubernetes.driver.pod.name": driver}
    )
    submitted = spark_submit(
        plane, namespace, SERVICE_ACCOUNT, submit_command(job, arguments), work, timeout=600
    )  # waits for the driver to end (spark.kubernetes.submission.waitAppCompletion)
    pod = plane.kubectl_json("get", "pod", driver, "-n", namespace)
    log = plane.kubectl("logs", driver, "-n", namespace, check=False).stdout
    phase = pod["status"].get("phase")
    assert submitted.returncode == 0 and phase == "Succeeded", (
        f"spark-submit exited {submitted.returncode}, driver {phase}:\n"
        f"{submitted.stderr[-3000:]}\ndriver's log:\n{log[-6000:]}"
    )
    results = [line for line in log.splitlines() if line.startswith(("{", "["))]
    assert results, log[-6000:]
    app = pod["metadata"]["labels"]["spark-app-selector"]
    executors = plane.kubectl_json(
        "get", "pods", "-n", namespace, "-l", f"spark-role=executor,spark-app-selector={app}"
    )["items"]
    return json.loads(results[-1]), executors
