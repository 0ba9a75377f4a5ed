"""The product on a real node: pods of the chart's operator and API, and worker pods beside an
app container, run by a kubelet and containerd (tests/support/kube/node.py).

One cluster for the module: the control plane on the node's bridge, the node, a PostgreSQL that
pods reach at the bridge's gateway address, the chart installed with the images the tests build,
its operator (a pod) managing every Queue here. Each scenario has a namespace and a queue of its
own. "Exactly once" is checked twice: from the table (every message Processed, one attempt) and
from what the example app (examples/app/app.py) records for every message it handled, one file
per pod in a hostPath folder.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from tablequeue import NewMessage, Queue, connect
from tablequeue.operator.deletion_cost import DELETION_COST
from tablequeue.pipeline.on_kubernetes import KubernetesJob
from tests.support.deploy_tools import DeployTools
from tests.support.keda import KedaOperator, keda_metrics_server
from tests.support.kube.fixtures import apply, get, queue, secret, wait_ready
from tests.support.metrics_adapter import prometheus_adapter
from tests.support.monitoring import ALERTS, dashboard_queries
from tests.support.prometheus_server import prometheus_server
from tests.support.waiting import wait_until

from . import spark_on_node
from .pods import (
    RELEASE,
    RELEASE_NAMESPACE,
    ROOT,
    Cluster,
    Scenario,
    app_template,
    assert_exactly_once,
    deployment,
    fixed_workers,
    get_status,
    node_cluster,
    scaled_workers,
    scenario,
    scrape_configs,
    worker_status,
)

__all__ = ["node_cluster", "scenario"]  # fixtures, for this module
pytestmark = pytest.mark.timeout(900)


# --- 1. the chart's pods --------------------------------------------------------------------------


def test_pods_readme_install_runs_the_chart_and_the_documented_queues_handle_messages(
    node_cluster: Cluster,
) -> None:
    """The fixture ran README's commands as written (then upgraded to the images built here):
    the operator and the API are Ready through their probes. README's Queue (namespace default,
    README's app image beside the worker) and examples/queue.yaml applied as
    docs/getting-started/kubernetes.md says (its namespace shop, its Secret there, a Python
    handler in the worker) each get a worker pod for a message and handle it."""
    cluster = node_cluster
    readme_queue = connect(cluster.readme_database).queue("send-order-confirmation")
    readme_message = readme_queue.enqueue({"OrderId": "README-1"}).id
    pod_url, shop_database = cluster.new_database()
    cluster.plane.kubectl("create", "namespace", "shop")
    apply(cluster.plane, secret("orders-db", "shop", pod_url))
    cluster.plane.kubectl("apply", "-f", str(ROOT / "examples" / "queue.yaml"))
    wait_ready(cluster.plane, "send-order-confirmation", "shop", timeout=120)
    shop_queue = connect(shop_database).queue("send-order-confirmation")
    shop_message = shop_queue.enqueue({"OrderId": "A-1", "Email": "ann@example.com"}).id
    wait_processed(cluster, "default", readme_queue, readme_message)
    wait_processed(cluster, "shop", shop_queue, shop_message)
    instance = f"app.kubernetes.io/instance={RELEASE}"
    for component in ("operator", "api"):
        selector = f"{instance},app.kubernetes.io/name=tablequeue-{component}"
        (pod,) = cluster.wait_ready(RELEASE_NAMESPACE, selector)
        spec = pod["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        (container,) = spec["containers"]
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["readinessProbe"] and container["livenessProbe"]
        status = pod["status"]["containerStatuses"][0]
        assert status["ready"] and status["restartCount"] == 0, status
    api_pods = f"{instance},app.kubernetes.io/name=tablequeue-api"
    (api,) = cluster.ready_pods(RELEASE_NAMESPACE, api_pods)
    assert get_status(f"http://{api['status']['podIP']}:8000/readyz")[0] == 200


def wait_processed(cluster: Cluster, namespace: str, orders: Queue, message_id: int | None) -> None:
    assert message_id is not None
    try:
        wait_until(lambda: orders.get(message_id).status == "Processed", timeout=240)
    except AssertionError as error:
        workers = "app.kubernetes.io/name=tablequeue-worker"
        raise AssertionError(f"{error}\n{cluster.describe(namespace, workers)}") from None


# --- 2. worker pods beside the app ----------------------------------------------------------------


def test_pods_workers_beside_the_app_drain_10000_messages_exactly_once(
    scenario: Scenario,
) -> None:
    """The app starts listening 3 s after its container starts: the worker waits for it (with
    maxAttempts 1 a lease before would send messages to Error). The kubelet is restarted while
    the pods drain: they keep running, nothing is lost."""
    scenario.apply(
        maxAttempts=1,
        onLeaseExpired="Abandon",
        keepProcessedFor="1d",
        workers=fixed_workers(scenario.cluster, 2, 20, 8)
        | {"handler": {"http": {"port": 8080, "path": "/process"}}},
    )
    # The messages wait before the pods start: the workers meet them before their apps listen.
    wait_ready(scenario.cluster.plane, scenario.name, scenario.namespace, timeout=120)
    began = time.monotonic()
    ids = scenario.enqueue(10_000)
    wait_until(lambda: scenario.statuses().get("Processed", 0) >= 2_000, timeout=300)
    scenario.cluster.node.restart_kubelet()
    wait_until(lambda: scenario.drained(len(ids)), timeout=600, interval=1)
    assert_exactly_once(scenario, ids)
    print(f"2 pods drained 10,000 in {time.monotonic() - began:.1f}s, the kubelet restarted")
    for pod in scenario.worker_pods():
        for status in pod["status"]["containerStatuses"]:
            assert status["restartCount"] == 0, status


def test_pods_rollout_and_scale_in_mid_drain_lose_nothing_and_run_nothing_twice(
    scenario: Scenario,
) -> None:
    """Under `onLeaseExpired: Abandon` and `maxAttempts: 1` (any message cut short would show):
    a rolling update of the worker template while 10,000 messages drain, then a scale-in from 4
    pods to 1 while handlers that take 2 s run. Each old pod's worker stops leasing, gives back
    what has not started and finishes what runs, its app serving until then (preStop /drained);
    the pods removed first are the idle ones (pod-deletion-cost)."""
    spec: dict[str, Any] = {
        "maxAttempts": 1,
        "onLeaseExpired": "Abandon",
        "keepProcessedFor": "1d",
        "workers": fixed_workers(scenario.cluster, 4, 10, 4),
    }
    scenario.apply(**spec)
    cluster = scenario.cluster
    cluster.wait_ready(scenario.namespace, scenario.selector, count=4)
    ids = scenario.enqueue(10_000, sleepSeconds=0.05)
    wait_until(lambda: scenario.statuses().get("Processed", 0) >= 1_000, timeout=300)
    first = {p["metadata"]["name"] for p in scenario.worker_pods()}
    container = spec["workers"]["template"]["spec"]["containers"][0]
    container["env"].append({"name": "ROLLOUT", "value": "2"})
    scenario.apply(**spec)

    def an_old_pod_stopping() -> bool:
        return any(
            p["metadata"]["name"] in first and p["metadata"].get("deletionTimestamp")
            for p in scenario.worker_pods()
        )

    wait_until(an_old_pod_stopping, timeout=60, interval=0.2)
    assert scenario.statuses().get("Pending", 0) > 0, "drained before the rollout began"
    rollout = ("rollout", "status", deployment(scenario), "-n", scenario.namespace)
    cluster.plane.kubectl(*rollout, "--timeout=300s", timeout=320)
    # The old pods are Terminating until their workers drained (the app's preStop waits).
    wait_until(
        lambda: not first & {p["metadata"]["name"] for p in scenario.worker_pods()}, timeout=120
    )
    wait_until(lambda: scenario.drained(len(ids)), timeout=600, interval=1)

    slow = [f"slow-{n}" for n in range(32)]
    with connect(scenario.url) as db:
        db.queue(scenario.name).enqueue_many(
            [NewMessage(message_id=i, message={"sleepSeconds": 2}) for i in slow]
        )
    wait_until(lambda: scenario.statuses().get("Leased", 0) >= 8, timeout=120)
    cluster.plane.kubectl("scale", deployment(scenario), "--replicas=1", "-n", scenario.namespace)
    wait_until(lambda: len(scenario.worker_pods()) == 1, timeout=120, interval=0.5)
    wait_until(lambda: scenario.drained(len(ids) + len(slow)), timeout=600, interval=1)
    assert_exactly_once(scenario, ids + slow)
    assert_no_failed_hooks(scenario)


def test_pods_scale_in_removes_the_idle_pods_and_keeps_the_busy_one(scenario: Scenario) -> None:
    """One pod busy with a long handler and three idle ones, scaled from 4 to 1: the ReplicaSet
    removes the three idle pods (the operator raised the busy pod's pod-deletion-cost from its
    workers' heartbeats) and the long handler finishes where it started, once."""
    scenario.apply(
        maxAttempts=1,
        onLeaseExpired="Abandon",
        keepProcessedFor="1d",
        workers=fixed_workers(scenario.cluster, 4, 1, 1),
    )
    cluster = scenario.cluster
    cluster.wait_ready(scenario.namespace, scenario.selector, count=4)
    ids = scenario.enqueue(1, sleepSeconds=30)

    def costed_pods() -> list[str]:
        return [
            p["metadata"]["name"]
            for p in scenario.worker_pods()
            if p["metadata"].get("annotations", {}).get(DELETION_COST) == "1"
        ]

    (busy,) = wait_until(costed_pods, timeout=60, interval=0.5)
    assert scenario.statuses() == {"Leased": 1}
    cluster.plane.kubectl("scale", deployment(scenario), "--replicas=1", "-n", scenario.namespace)
    wait_until(lambda: len(scenario.worker_pods()) == 1, timeout=120, interval=0.5)
    assert [p["metadata"]["name"] for p in scenario.worker_pods()] == [busy]
    wait_until(lambda: scenario.drained(len(ids)), timeout=120, interval=1)
    assert_exactly_once(scenario, ids)
    assert scenario.handled_by() == {ids[0]: busy}
    assert_no_failed_hooks(scenario)  # the idle pods' workers waited for their apps' hooks


def assert_no_failed_hooks(scenario: Scenario) -> None:
    failed = [e["message"] for e in scenario.events("Pod") if e["reason"] == "FailedPreStopHook"]
    assert not failed, failed


def test_pods_deleted_pod_and_killed_worker_container_lose_nothing(scenario: Scenario) -> None:
    """A pod deleted by hand stops like a scaled-in one: nothing lost, nothing run twice. A worker
    container SIGKILLed through the runtime loses nothing either: its leases expire and are
    retried (`onLeaseExpired: Retry`), so only the messages it had under way may run twice."""
    scenario.apply(
        maxAttempts=3,
        onLeaseExpired="Retry",
        leaseSeconds=10,
        keepProcessedFor="1d",
        workers=fixed_workers(scenario.cluster, 2, 10, 4),
    )
    cluster = scenario.cluster
    cluster.wait_ready(scenario.namespace, scenario.selector, count=2)
    ids = scenario.enqueue(300, sleepSeconds=0.2)
    wait_until(lambda: scenario.statuses().get("Processed", 0) >= 40, timeout=120)
    deleted = scenario.worker_pods()[0]["metadata"]["name"]
    cluster.plane.kubectl("delete", "pod", deleted, "-n", scenario.namespace, "--wait=false")
    wait_until(lambda: scenario.statuses().get("Processed", 0) >= 150, timeout=300)
    assert not {i: n for i, n in scenario.handled().items() if n > 1}, "a graceful stop ran twice"

    victim = cluster.ready_pods(scenario.namespace, scenario.selector)[0]
    (worker,) = worker_status(victim)
    cluster.node.kill_container(worker["containerID"])
    wait_until(lambda: scenario.drained(len(ids)), timeout=600, interval=1)
    handled = scenario.handled()
    assert set(handled) == set(ids)
    twice = {i for i, n in handled.items() if n > 1}
    assert len(twice) <= 4 * 10, twice  # at most one batch of the killed worker
    assert scenario.statuses() == {"Processed": len(ids)}
    pod = cluster.plane.kubectl_json(
        "get", "pod", victim["metadata"]["name"], "-n", scenario.namespace
    )
    (restarted,) = worker_status(pod)
    assert restarted["restartCount"] == 1, restarted


def test_pods_operator_scales_real_pods_from_zero_and_back(scenario: Scenario) -> None:
    """Operator mode: no backlog, no pods; a backlog brings pods that drain it (scale-from-zero
    time: first message enqueued to first lease); then back to zero after the cooldown."""
    scenario.apply(
        keepProcessedFor="1d", workers=scaled_workers(scenario.cluster, "Operator", 0, cooldown=5)
    )
    cluster = scenario.cluster
    found = ("get", deployment(scenario), "-n", scenario.namespace, "-o", "json")
    made = wait_until(lambda: cluster.plane.kubectl(*found, check=False).returncode == 0)
    assert made and json.loads(cluster.plane.kubectl(*found).stdout)["spec"]["replicas"] == 0
    assert scenario.worker_pods() == []
    ids = scenario.enqueue(600, sleepSeconds=0.2)  # 3 pods: 60 a second, 10 s at least
    wait_until(lambda: len(scenario.worker_pods()) == 3, timeout=120, interval=0.5)
    wait_until(lambda: scenario.drained(len(ids)), timeout=600, interval=1)
    with psycopg.connect(scenario.url) as conn:
        waited = conn.execute(
            sql.SQL("SELECT extract(epoch FROM min(started_at) - min(created_at)) FROM {}").format(
                sql.Identifier(scenario.table)
            )
        ).fetchone()
    assert waited is not None
    print(f"scale from zero: {float(waited[0]):.1f} s from the first message to the first lease")
    wait_until(lambda: scenario.worker_pods() == [], timeout=180, interval=1)
    assert_exactly_once(scenario, ids)


# --- 3. the archive CronJob of spec.archive -------------------------------------------------------


def test_pods_archive_cronjob_runs_the_pipeline_image_on_the_node(
    scenario: Scenario, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """One real run: the chart's operator (a pod) makes the Queue's CronJob; a Job made from it,
    as `kubectl create job --from=cronjob/...` makes one, runs the pipeline image's archive with
    local Spark on the node, against the scenario's PostgreSQL, into a PersistentVolumeClaim (a
    hostPath PersistentVolume of this machine): every Processed message leaves the table for
    Parquet on the volume."""
    cluster, namespace = scenario.cluster, scenario.namespace
    cluster.load_pipeline_image(tmp_path_factory.mktemp("jars"))
    folder = cluster.records / f"{scenario.name}-archive"
    folder.mkdir()
    folder.chmod(0o777)  # hostPath volumes keep their owner: the image's user writes here
    volume = f"{namespace}-archive"
    apply(
        cluster.plane,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": volume},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "manual",
                "hostPath": {"path": str(folder), "type": "Directory"},
                "claimRef": {"namespace": namespace, "name": "archive"},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "archive", "namespace": namespace},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "manual",
                "volumeName": volume,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    archive = {
        "schedule": "0 3 1 1 *",  # once a year: the Job below is the run
        "destination": {"persistentVolumeClaim": {"claimName": "archive"}},
        "olderThan": "0s",
        "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
    }
    scenario.apply_without_workers(idempotent=True, archive=archive)
    ids = scenario.enqueue(40, kind="archive")
    scenario.complete(len(ids))
    assert scenario.statuses() == {"Processed": 40}

    cronjob = f"{scenario.name}-archive"
    wait_until(lambda: get(cluster.plane, "cronjob", cronjob, namespace), timeout=60)
    cluster.plane.kubectl(
        "create", "job", "archive-now", f"--from=cronjob/{cronjob}", "-n", namespace
    )

    def finished() -> dict[str, Any] | None:
        job = cluster.plane.kubectl_json("get", "job", "archive-now", "-n", namespace)
        status = job.get("status") or {}
        if status.get("failed"):
            raise AssertionError(f"the archive Job failed: {status}")
        return status if status.get("succeeded") else None

    try:
        wait_until(finished, timeout=600, interval=2)
    except AssertionError as error:
        raise AssertionError(
            f"{error}\n{cluster.describe(namespace, 'job-name=archive-now')}"
        ) from None
    log = cluster.plane.kubectl("logs", "job/archive-now", "-n", namespace).stdout
    assert f"{scenario.name}: archived 40, deleted 40" in log, log
    assert scenario.statuses() == {}
    written = list((folder / f"queue={scenario.name}" / "status=Processed").rglob("*.parquet"))
    assert written, sorted(str(path) for path in folder.rglob("*"))


def test_pods_spark_on_kubernetes_enqueues_and_archives_with_executor_pods(
    scenario: Scenario, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """spark-submit in cluster mode, the command on_kubernetes writes: a driver pod and two
    executor pods of the pipeline image; the enqueue reads a JDBC table (the drivers on the
    executors' class path), the URL of the queue's database comes from its Secret; the archive
    writes Parquet to a hostPath volume of the driver and the executors."""
    cluster, namespace = scenario.cluster, scenario.namespace
    image = cluster.load_pipeline_image(tmp_path_factory.mktemp("jars"))
    scenario.apply_without_workers(idempotent=True)
    with psycopg.connect(scenario.url, autocommit=True) as connection:
        connection.execute("CREATE TABLE catalogue (sku text PRIMARY KEY, price integer)")
        connection.execute(
            "INSERT INTO catalogue SELECT 'S-' || n, n FROM generate_series(1, 500) n"
        )
    folder = cluster.records / f"{scenario.name}-spark"
    folder.mkdir()
    folder.chmod(0o777)  # the image's user writes the archive here
    volume = {
        f"spark.kubernetes.{role}.volumes.hostPath.archive.{key}": value
        for role in ("driver", "executor")
        for key, value in (("mount.path", "/archive"), ("options.path", str(folder)))
    }
    spark_on_node.allow_jobs(cluster, namespace)
    job = KubernetesJob(
        image=image,
        namespace=namespace,
        service_account=spark_on_node.SERVICE_ACCOUNT,
        database_secret="db",  # the scenario's, key `url`
        api_server=cluster.plane.server,
        executors=2,
        executor_memory="512m",
        driver_memory="512m",
        image_pull_policy="Never",
        extra_conf=spark_on_node.this_cluster(cluster) | volume,
    )
    work = tmp_path_factory.mktemp("spark")
    source = cluster.for_pods(scenario.url)
    enqueued, executors = spark_on_node.run_job(
        cluster,
        dataclasses.replace(job, name=f"{scenario.name}-enqueue"),
        ["enqueue", scenario.name, source, "--format", "jdbc", "--table", "catalogue",
         "--id-column", "sku", "--partitions", "4", "--json"],
        work,
    )  # fmt: skip
    assert (enqueued["inserted"], enqueued["rejected"]) == (500, 0), enqueued
    assert len(executors) == 2, executors
    assert scenario.statuses() == {"Pending": 500}
    scenario.complete(500)

    [archived], executors = spark_on_node.run_job(
        cluster,
        dataclasses.replace(job, name=f"{scenario.name}-archive"),
        ["archive", scenario.name, "--to", "/archive", "--older-than", "0s", "--json"],
        work,
    )
    assert (archived["archived"], archived["deleted"]) == (500, 500), archived
    assert len(executors) == 2, executors
    assert scenario.statuses() == {}
    written = list((folder / f"queue={scenario.name}" / "status=Processed").rglob("*.parquet"))
    assert written, sorted(str(path) for path in folder.rglob("*"))


# --- 4. Prometheus scrapes the pods the chart's monitors select -----------------------------------


def test_pods_prometheus_scrapes_the_pods_the_charts_monitors_select_and_the_dashboard_has_data(
    scenario: Scenario, deploy_tools: DeployTools, tmp_path: Path
) -> None:
    scenario.apply(
        maxAttempts=1,
        health={"whenErrors": "Unhealthy"},
        workers={
            "template": app_template(scenario.cluster, start_delay=0),
            "autoscaling": {"mode": "None", "minReplicas": 1, "maxReplicas": 1},
        },
    )
    cluster = scenario.cluster
    # A Queue whose Secret is missing: the operator's reconcile errors have a series too.
    apply(cluster.plane, queue("broken", scenario.namespace, "no-such-secret"))
    cluster.wait_ready(scenario.namespace, scenario.selector)
    scenario.enqueue(50)
    with connect(scenario.url) as db:
        target = db.queue(scenario.name)
        target.enqueue_many([NewMessage(message={"fail": True}) for _ in range(5)])
        target.enqueue_many([NewMessage(message={"later": True}, after=3600)])
    with prometheus_server(
        deploy_tools.prometheus, scrape_configs(cluster), tmp_path / "prometheus", (ALERTS,)
    ) as prometheus:

        def every_kind_of_pod_up() -> set[str] | None:
            up = prometheus.query('up{pod!=""} == 1')
            containers = {s["metric"].get("container", "") for s in up}
            wanted = {"operator", "api", "tablequeue-worker"}
            return containers if wanted <= containers else None

        wait_until(every_kind_of_pod_up, timeout=120, interval=1)
        (worker,) = prometheus.query(f'up{{queue="{scenario.name}"}}')
        assert worker["metric"]["namespace"] == scenario.namespace
        prometheus.wait_for_series(dashboard_queries())


# --- 5. an HPA and KEDA scale real pods -----------------------------------------------------------


def test_pods_hpa_scales_real_pods_through_prometheus_and_prometheus_adapter(
    scenario: Scenario, deploy_tools: DeployTools, tmp_path: Path
) -> None:
    """HPA mode with pods: Prometheus scrapes the operator's pod (found as the chart's
    ServiceMonitor says), prometheus-adapter serves the backlog as an external metric, the HPA
    controller scales the Deployment 1 -> 3, the pods become Ready and drain, then 3 -> 1."""
    workers = scaled_workers(scenario.cluster, "HPA", 1, cooldown=10, concurrency=2)
    scenario.apply(keepProcessedFor="1d", workers=workers)
    cluster = scenario.cluster
    cluster.wait_ready(scenario.namespace, scenario.selector, count=1)
    with (
        prometheus_server(
            deploy_tools.prometheus, scrape_configs(cluster), tmp_path / "prometheus"
        ) as prometheus,
        prometheus_adapter(
            deploy_tools.prometheus_adapter, cluster.plane, prometheus, scenario.namespace, tmp_path
        ),
    ):
        began = time.monotonic()
        ids = scenario.enqueue(300, sleepSeconds=1)  # one pod: 2 a second, the backlog lasts
        cluster.wait_ready(scenario.namespace, scenario.selector, count=3, timeout=180)
        scaled_up = time.monotonic() - began
        wait_until(lambda: scenario.drained(len(ids)), timeout=300, interval=1)
        began = time.monotonic()
        wait_until(lambda: len(scenario.worker_pods()) == 1, timeout=180, interval=1)
        scaled_down = time.monotonic() - began
    assert_exactly_once(scenario, ids)
    assert "SuccessfulRescale" in {e["reason"] for e in scenario.events("HorizontalPodAutoscaler")}
    print(f"HPA with pods: 1 -> 3 Ready in {scaled_up:.1f}s, drained -> 1 in {scaled_down:.1f}s")


def test_pods_keda_scales_real_pods_from_zero_to_several_and_back(
    scenario: Scenario, deploy_tools: DeployTools, tmp_path: Path
) -> None:
    """KEDA mode with pods: KEDA's operator polls the PostgreSQL backlog (0 -> 1 and back to 0)
    and its HPA, reading KEDA's metrics API server (cmd/adapter) through the aggregation layer,
    takes it from 1 to 3 Ready pods that drain the queue."""
    cluster = scenario.cluster
    plane = cluster.plane
    for crd in deploy_tools.keda_crds:
        plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd))
    plane.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    keda = KedaOperator(deploy_tools.keda_operator, plane, scenario.namespace, tmp_path)
    keda.start()
    try:
        with keda_metrics_server(
            deploy_tools.keda_adapter, plane, keda, scenario.namespace, tmp_path
        ) as log:
            workers = scaled_workers(scenario.cluster, "KEDA", 0, cooldown=5, concurrency=2)
            scenario.apply(keepProcessedFor="1d", workers=workers)
            hpa = ("get", "hpa", f"keda-hpa-{scenario.name}-workers", "-n", scenario.namespace)
            wait_until(lambda: plane.kubectl(*hpa, check=False).returncode == 0, timeout=180)
            assert scenario.worker_pods() == []
            began = time.monotonic()
            ids = scenario.enqueue(300, sleepSeconds=1)  # one pod: 2 a second, the backlog lasts
            try:
                cluster.wait_ready(scenario.namespace, scenario.selector, count=3, timeout=240)
            except AssertionError as error:
                raise AssertionError(
                    f"{error}\nKEDA:\n{keda.log_tail()}\nmetrics server:\n"
                    f"{log.read_text(errors='replace')[-4000:]}"
                ) from None
            scaled_up = time.monotonic() - began
            wait_until(lambda: scenario.drained(len(ids)), timeout=300, interval=1)
            began = time.monotonic()
            wait_until(lambda: scenario.worker_pods() == [], timeout=240, interval=1)
            scaled_down = time.monotonic() - began
    finally:
        keda.stop()
    assert_exactly_once(scenario, ids)
    print(f"KEDA with pods: 0 -> 3 Ready in {scaled_up:.1f}s, drained -> 0 in {scaled_down:.1f}s")
