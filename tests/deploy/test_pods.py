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

import itertools
import json
import re
import shutil
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from tablequeue import NewMessage, connect
from tests.support.deploy_tools import CHART, DeployTools
from tests.support.keda import KedaOperator, keda_metrics_server
from tests.support.kube import node as kube_node
from tests.support.kube.control_plane import ControlPlane
from tests.support.kube.fixtures import apply, queue, secret
from tests.support.metrics_adapter import prometheus_adapter
from tests.support.postgres_server import PostgresServer, postgres_server
from tests.support.prometheus_server import prometheus_server
from tests.support.waiting import wait_until

from .containers import build_example_app, build_image
from .helm import REQUIRED_VALUES, run, tool_env
from .test_monitoring import ALERTS, dashboard_queries

pytestmark = pytest.mark.timeout(900)

ROOT = Path(__file__).resolve().parents[2]
RELEASE = "tq"
RELEASE_NAMESPACE = "tablequeue-system"
_numbers = itertools.count(1)


@dataclass(frozen=True)
class Cluster:
    plane: ControlPlane
    node: kube_node.Node
    postgres: PostgresServer
    app_image: str
    records: Path
    """A hostPath folder the example app writes its records into, one file per pod."""

    def new_database(self) -> tuple[str, str]:
        """A fresh database: (its URL for pods, for this process)."""
        name = f"pods_{next(_numbers)}"
        local = self.postgres.create_database(name)
        return local.replace("127.0.0.1", kube_node.GATEWAY), local

    def pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.plane.kubectl_json(
            "get", "pods", "-n", namespace, "-l", selector
        )["items"]
        return found

    def wait_ready(
        self, namespace: str, selector: str, count: int = 1, timeout: float = 180
    ) -> list[dict[str, Any]]:
        """Wait until `count` pods are Ready; at the deadline, fail with what describes them."""
        deadline = time.monotonic() + timeout
        while len(ready := self.ready_pods(namespace, selector)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{len(ready)} of {count} pods Ready ({selector}):\n"
                    + self.describe(namespace, selector)
                )
            time.sleep(0.5)
        return ready

    def describe(self, namespace: str, selector: str) -> str:
        """What `kubectl describe` says of the pods, and their containers' last logs."""
        plane = self.plane
        parts = [plane.kubectl("describe", "pods", "-n", namespace, "-l", selector).stdout[-6000:]]
        for previous in ("--previous", None):
            logs = plane.kubectl(
                "logs", "-n", namespace, "-l", selector, "--all-containers", "--prefix",
                "--tail=40", *([previous] if previous else []), check=False,
            )  # fmt: skip
            parts.append(f"--- logs {previous or ''} ---\n{logs.stdout}{logs.stderr}")
        return "\n".join(parts)

    def ready_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return [
            p
            for p in self.pods(namespace, selector)
            if p["metadata"].get("deletionTimestamp") is None
            and any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in p["status"].get("conditions", [])
            )
        ]


@pytest.fixture(scope="module")
def node_cluster(
    deploy_tools: DeployTools, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    worker = build_image("Dockerfile.worker", "tablequeue-worker")
    operator = build_image("Dockerfile.operator", "tablequeue-operator")
    app = build_example_app()
    records = Path(tempfile.mkdtemp(prefix="tablequeue-records-"))
    records.chmod(0o777)  # the app runs as 65532
    pods = (kube_node.GATEWAY, kube_node.POD_SUBNET)
    crds = [ROOT / "crds" / "queue.yaml"]
    try:
        with (
            kube_node.cluster(crds=crds) as (plane, node),
            postgres_server(pods=pods) as postgres,
        ):
            for image in (worker, operator, app):
                node.load_image(image)
            for crd in deploy_tools.prometheus_operator_crds:
                plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd))
            found = Cluster(plane, node, postgres, app, records)
            _install_chart(found, deploy_tools, tmp_path_factory.mktemp("helm"), worker, operator)
            yield found
    finally:
        shutil.rmtree(records, ignore_errors=True)


def _install_chart(
    cluster: Cluster, tools: DeployTools, home: Path, worker: str, operator: str
) -> None:
    """`helm install` as a user does, with the images built here (no registry: Never pull)."""
    plane = cluster.plane
    plane.kubectl("create", "namespace", RELEASE_NAMESPACE)
    pod_url, _ = cluster.new_database()
    apply(plane, secret("tablequeue-db", RELEASE_NAMESPACE, pod_url))
    repository, tag = operator.rsplit(":", 1)
    worker_repository, worker_tag = worker.rsplit(":", 1)
    values = {
        "operator.image.repository": repository,
        "operator.image.tag": tag,
        "operator.image.pullPolicy": "Never",
        "operator.workerImage.repository": worker_repository,
        "operator.workerImage.tag": worker_tag,
        "operator.interval": "2",
        "api.image.repository": worker_repository,
        "api.image.tag": worker_tag,
        "api.image.pullPolicy": "Never",
    }
    settings = [part for key, value in values.items() for part in ("--set", f"{key}={value}")]
    env = tool_env(tools, home, plane.kubeconfig)
    command: list[str | Path] = [tools.helm, "install", RELEASE, CHART]
    run([*command, "--namespace", RELEASE_NAMESPACE, *REQUIRED_VALUES, *settings], env)
    for component in ("operator", "api"):
        cluster.wait_ready(RELEASE_NAMESPACE, f"app.kubernetes.io/name=tablequeue-{component}")


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError:
        return 0, ""


# --- 1. the chart's pods --------------------------------------------------------------------------


def test_pods_chart_runs_the_operator_and_the_api_ready_through_their_probes(
    node_cluster: Cluster,
) -> None:
    cluster = node_cluster
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
    assert _get(f"http://{api['status']['podIP']}:8000/readyz")[0] == 200


# --- 2. worker pods beside the app ----------------------------------------------------------------


def app_template(cluster: Cluster, *, start_delay: float = 3.0) -> dict[str, Any]:
    """The user's pod template: the example app, slow to start, recording what it handles."""
    return {
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": cluster.app_image,
                    "imagePullPolicy": "Never",
                    "ports": [{"name": "http", "containerPort": 8080}],
                    "env": [
                        {"name": "RECORDS_DIR", "value": "/records"},
                        {"name": "START_DELAY_SECONDS", "value": str(start_delay)},
                    ],
                    "volumeMounts": [{"name": "records", "mountPath": "/records"}],
                }
            ],
            "volumes": [
                {
                    "name": "records",
                    "hostPath": {"path": str(cluster.records), "type": "Directory"},
                }
            ],
        }
    }


@dataclass
class Scenario:
    cluster: Cluster
    namespace: str
    name: str
    url: str
    """The database, from this process."""

    @property
    def table(self) -> str:
        return self.name.replace("-", "_")

    @property
    def selector(self) -> str:
        return f"tablequeue.dev/queue={self.name}"

    def apply(self, **spec: Any) -> None:
        apply(self.cluster.plane, queue(self.name, self.namespace, **spec))

    def enqueue(self, count: int, **body: Any) -> list[str]:
        ids = [f"{self.name}-{n}" for n in range(count)]
        with connect(self.url) as db:
            target = db.queue(self.name)
            for start in range(0, count, 1000):
                target.enqueue_many(
                    [NewMessage(message_id=i, message=body) for i in ids[start : start + 1000]]
                )
        return ids

    def statuses(self) -> dict[str, int]:
        return dict(self._count_by("status"))

    def attempts(self) -> Counter[int]:
        return Counter(dict(self._count_by("attempts")))

    def _count_by(self, column: str) -> list[tuple[Any, int]]:
        query = sql.SQL("SELECT {column}, count(*) FROM {table} GROUP BY 1").format(
            column=sql.Identifier(column), table=sql.Identifier(self.table)
        )
        with psycopg.connect(self.url) as conn:
            return conn.execute(query).fetchall()

    def handled(self) -> Counter[str]:
        """How many times the app handled each message, from its records."""
        counted: Counter[str] = Counter()
        for path in self.cluster.records.glob(f"{self.name}-*.tsv"):
            for line in path.read_text().splitlines():
                message_id, _pod, _attempts = line.split("\t")
                counted[message_id] += 1
        return counted

    def drained(self, total: int) -> dict[str, int] | None:
        found = self.statuses()
        return found if found.get("Processed", 0) == total else None

    def worker_pods(self) -> list[dict[str, Any]]:
        return self.cluster.pods(self.namespace, self.selector)


@pytest.fixture
def scenario(node_cluster: Cluster) -> Iterator[Scenario]:
    cluster = node_cluster
    number = next(_numbers)
    namespace = f"pods-{number}"
    cluster.plane.kubectl("create", "namespace", namespace)
    pod_url, local_url = cluster.new_database()
    apply(cluster.plane, secret("db", namespace, pod_url))
    yield Scenario(cluster, namespace, f"work-{number}", local_url)
    cluster.plane.kubectl("delete", "namespace", namespace, "--wait=false")


def assert_exactly_once(scenario: Scenario, ids: list[str]) -> None:
    assert scenario.statuses() == {"Processed": len(ids)}
    assert scenario.attempts() == Counter({1: len(ids)})
    handled = scenario.handled()
    assert set(handled) == set(ids)
    twice = {i: n for i, n in handled.items() if n > 1}
    assert not twice, f"{len(twice)} messages handled more than once: {list(twice)[:10]}"


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
        workers={
            "template": app_template(scenario.cluster),
            "handler": {"http": {"port": 8080, "path": "/process"}},
            "batchSize": 20,
            "concurrency": 8,
            "autoscaling": {"mode": "None", "minReplicas": 2, "maxReplicas": 2},
        },
    )
    wait_until(lambda: scenario.cluster.ready_pods(scenario.namespace, scenario.selector), 180)
    ids = scenario.enqueue(10_000)
    wait_until(lambda: scenario.statuses().get("Processed", 0) >= 2_000, timeout=300)
    scenario.cluster.node.restart_kubelet()
    wait_until(lambda: scenario.drained(len(ids)), timeout=600, interval=1)
    assert_exactly_once(scenario, ids)
    for pod in scenario.worker_pods():
        for status in pod["status"]["containerStatuses"]:
            assert status["restartCount"] == 0, status


def worker_status(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in pod["status"]["containerStatuses"] if s["name"] == "tablequeue-worker"]


def deployment(scenario: Scenario) -> str:
    return f"deployment/{scenario.name}-workers"


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
        "workers": {
            "template": app_template(scenario.cluster),
            "batchSize": 10,
            "concurrency": 4,
            "autoscaling": {"mode": "None", "minReplicas": 4, "maxReplicas": 4},
        },
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


def test_pods_deleted_pod_and_killed_worker_container_lose_nothing(scenario: Scenario) -> None:
    """A pod deleted by hand stops like a scaled-in one: nothing lost, nothing run twice. A worker
    container SIGKILLed through the runtime loses nothing either: its leases expire and are
    retried (`onLeaseExpired: Retry`), so only the messages it had under way may run twice."""
    scenario.apply(
        maxAttempts=3,
        onLeaseExpired="Retry",
        leaseSeconds=10,
        keepProcessedFor="1d",
        workers={
            "template": app_template(scenario.cluster),
            "batchSize": 10,
            "concurrency": 4,
            "autoscaling": {"mode": "None", "minReplicas": 2, "maxReplicas": 2},
        },
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
    (worker,) = [
        s for s in victim["status"]["containerStatuses"] if s["name"] == "tablequeue-worker"
    ]
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
    (restarted,) = [
        s for s in pod["status"]["containerStatuses"] if s["name"] == "tablequeue-worker"
    ]
    assert restarted["restartCount"] == 1, restarted


def test_pods_operator_scales_real_pods_from_zero_and_back(scenario: Scenario) -> None:
    """Operator mode: no backlog, no pods; a backlog brings pods that drain it (scale-from-zero
    time: first message enqueued to first lease); then back to zero after the cooldown."""
    scenario.apply(
        keepProcessedFor="1d",
        workers={
            "template": app_template(scenario.cluster, start_delay=0),
            "autoscaling": {
                "mode": "Operator",
                "minReplicas": 0,
                "maxReplicas": 3,
                "messagesPerReplica": 100,
                "cooldownSeconds": 5,
            },
        },
    )
    cluster = scenario.cluster
    found = ("get", deployment(scenario), "-n", scenario.namespace, "-o", "json")
    made = wait_until(lambda: cluster.plane.kubectl(*found, check=False).returncode == 0)
    assert made and json.loads(cluster.plane.kubectl(*found).stdout)["spec"]["replicas"] == 0
    assert scenario.worker_pods() == []
    ids = scenario.enqueue(600, sleepSeconds=0.05)
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


# --- 5. Prometheus scrapes the pods the chart's monitors select ----------------------------------


def _pod_label(relabeling: dict[str, Any], pod: dict[str, Any]) -> tuple[str, str]:
    """A monitor's relabeling of a pod label onto the target (the only kind the chart has)."""
    (source,) = relabeling["sourceLabels"]
    labels = pod["metadata"].get("labels", {})
    value = next(
        (v for k, v in labels.items() if source == "__meta_kubernetes_pod_label_" + _label(k)), ""
    )
    return relabeling["targetLabel"], value


def _label(name: str) -> str:
    """A Kubernetes label's name as Prometheus' service discovery writes it."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _containers_with_port(pod: dict[str, Any], port: str) -> Iterator[tuple[str, int]]:
    for container in pod["spec"]["containers"]:
        for declared in container.get("ports", []):
            if declared.get("name") == port:
                yield container["name"], declared["containerPort"]


def scrape_configs(cluster: Cluster) -> list[dict[str, Any]]:
    """The targets the chart's PodMonitor and ServiceMonitors select, labelled as
    prometheus-operator labels them (job, namespace, pod, container, the monitors' relabelings).

    Resolved here through the API server, not by Prometheus' kubernetes service discovery:
    Debian's Prometheus is built without it (`kubernetes_sd_configs` is an unknown field). The
    selection is the monitors' own: their label selectors, namespaces and port names, read from
    the objects the chart installed.
    """
    plane = cluster.plane
    configs: list[dict[str, Any]] = []
    monitors = plane.kubectl_json("get", "podmonitors,servicemonitors", "-n", RELEASE_NAMESPACE)
    for monitor in monitors["items"]:
        spec, name = monitor["spec"], monitor["metadata"]["name"]
        selector = ",".join(f"{k}={v}" for k, v in spec["selector"]["matchLabels"].items())
        if monitor["kind"] == "PodMonitor":
            scope = ["-A"] if spec["namespaceSelector"].get("any") else ["-n", RELEASE_NAMESPACE]
            pods = plane.kubectl_json("get", "pods", *scope, "-l", selector)["items"]
            endpoints = spec["podMetricsEndpoints"]
            job = f"{RELEASE_NAMESPACE}/{name}"
        else:
            services = plane.kubectl_json(
                "get", "services", "-n", RELEASE_NAMESPACE, "-l", selector
            )
            pod_selector = ",".join(
                f"{k}={v}" for s in services["items"] for k, v in s["spec"]["selector"].items()
            )
            pods = plane.kubectl_json("get", "pods", "-n", RELEASE_NAMESPACE, "-l", pod_selector)[
                "items"
            ]
            endpoints = spec["endpoints"]
            job = services["items"][0]["metadata"]["name"]
        for number, endpoint in enumerate(endpoints):
            static = []
            for pod in pods:
                if not pod["status"].get("podIP") or pod["metadata"].get("deletionTimestamp"):
                    continue
                for container, port in _containers_with_port(pod, endpoint["port"]):
                    labels = {
                        "job": job,
                        "namespace": pod["metadata"]["namespace"],
                        "pod": pod["metadata"]["name"],
                        "container": container,
                    }
                    labels |= dict(_pod_label(r, pod) for r in endpoint.get("relabelings", []))
                    static.append(
                        {"targets": [f"{pod['status']['podIP']}:{port}"], "labels": labels}
                    )
            configs.append(
                {
                    "job_name": f"{monitor['kind']}/{RELEASE_NAMESPACE}/{name}/{number}",
                    "metrics_path": endpoint.get("path", "/metrics"),
                    "honor_labels": bool(endpoint.get("honorLabels")),
                    "static_configs": static,
                }
            )
    return configs


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
        missing = dict(dashboard_queries())

        def all_return_series() -> bool:
            for name, expr in list(missing.items()):
                if prometheus.query(expr):
                    del missing[name]
            return not missing

        try:
            wait_until(all_return_series, timeout=120, interval=1)
        except AssertionError:
            raise AssertionError(f"no series for: {missing}\n{prometheus.log()}") from None


# --- 4. an HPA scales real pods ------------------------------------------------------------------


def test_pods_hpa_scales_real_pods_through_prometheus_and_prometheus_adapter(
    scenario: Scenario, deploy_tools: DeployTools, tmp_path: Path
) -> None:
    """HPA mode with pods: Prometheus scrapes the operator's pod (found as the chart's
    ServiceMonitor says), prometheus-adapter serves the backlog as an external metric, the HPA
    controller scales the Deployment 1 -> 3, the pods become Ready and drain, then 3 -> 1."""
    scenario.apply(
        keepProcessedFor="1d",
        workers={
            "template": app_template(scenario.cluster, start_delay=0),
            "concurrency": 2,
            "autoscaling": {
                "mode": "HPA",
                "minReplicas": 1,
                "maxReplicas": 3,
                "messagesPerReplica": 100,
                "cooldownSeconds": 2,
            },
        },
    )
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
        ids = scenario.enqueue(300, sleepSeconds=0.5)  # one pod: 4 a second, the backlog lasts
        cluster.wait_ready(scenario.namespace, scenario.selector, count=3, timeout=180)
        scaled_up = time.monotonic() - began
        wait_until(lambda: scenario.drained(len(ids)), timeout=300, interval=1)
        began = time.monotonic()
        wait_until(lambda: len(scenario.worker_pods()) == 1, timeout=180, interval=1)
        scaled_down = time.monotonic() - began
    assert_exactly_once(scenario, ids)
    reasons = [
        e["reason"]
        for e in cluster.plane.kubectl_json("get", "events", "-n", scenario.namespace)["items"]
        if e["involvedObject"]["kind"] == "HorizontalPodAutoscaler"
    ]
    assert "SuccessfulRescale" in reasons
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
            scenario.apply(
                keepProcessedFor="1d",
                workers={
                    "template": app_template(scenario.cluster, start_delay=0),
                    "concurrency": 2,
                    "autoscaling": {
                        "mode": "KEDA",
                        "minReplicas": 0,
                        "maxReplicas": 3,
                        "messagesPerReplica": 100,
                        "cooldownSeconds": 5,
                    },
                },
            )
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
