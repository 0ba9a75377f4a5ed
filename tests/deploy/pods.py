"""The node tests' cluster and scenarios (tests/deploy/test_pods.py): one control plane with a
real node (tests/support/kube/node.py), a PostgreSQL that pods reach at the bridge's gateway
address, the chart installed with the images the tests build; a namespace, database and Queue per
scenario, whose worker pods run beside the example app (examples/app), which records every
message it handled in a hostPath folder.
"""

from __future__ import annotations

import dataclasses
import itertools
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
import yaml
from psycopg import sql

from tablequeue import Completion, NewMessage, connect
from tests.support import doc_blocks
from tests.support.deploy_tools import CHART, DeployTools
from tests.support.kube import node as kube_node
from tests.support.kube.control_plane import ControlPlane
from tests.support.kube.fixtures import apply, queue, secret, wait_ready
from tests.support.postgres_server import PostgresServer, postgres_server

from .containers import build_example_app, build_image, build_pipeline_image
from .helm import run, tool_env

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
    readme_database: str = ""
    """The database of README's Queue (send-order-confirmation, namespace default)."""

    def new_database(self) -> tuple[str, str]:
        """A fresh database: (its URL for pods, for this process)."""
        name = f"pods_{next(_numbers)}"
        local = self.postgres.create_database(name)
        return self.for_pods(local), local

    @staticmethod
    def for_pods(local_url: str) -> str:
        """A database URL of this process as the pods reach it (the bridge's gateway)."""
        return local_url.replace("127.0.0.1", kube_node.GATEWAY)

    def load_pipeline_image(self, staging: Path) -> str:
        """The pipeline image (Dockerfile.pipeline, its jars staged in `staging`) in the node's
        containerd under the name the chart defaults to, never pulled; that name."""
        self.node.load_image(build_pipeline_image(staging), PIPELINE_IMAGE)
        return PIPELINE_IMAGE

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
    chart_tools: DeployTools, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    worker = build_image("Dockerfile.worker", "tablequeue-worker")
    operator = build_image("Dockerfile.operator", "tablequeue-operator")
    app = build_example_app()
    records = Path(tempfile.mkdtemp(prefix="tablequeue-records-"))
    records.chmod(0o777)  # the app runs as 65532
    pods = (kube_node.GATEWAY, kube_node.POD_SUBNET)
    try:
        with (
            kube_node.cluster() as (plane, node),
            postgres_server(pods=pods) as postgres,
        ):
            for image in (worker, operator, app):
                node.load_image(image)
            for crd in chart_tools.prometheus_operator_crds:
                plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd))
            found = Cluster(plane, node, postgres, app, records)
            home = tmp_path_factory.mktemp("helm")
            readme_db = _install_as_the_readme_says(found, chart_tools, home, worker, operator)
            _upgrade_for_the_scenarios(found, chart_tools, home, worker, operator)
            yield dataclasses.replace(found, readme_database=readme_db)
    finally:
        shutil.rmtree(records, ignore_errors=True)


PIPELINE_IMAGE = "docker.io/tablequeue/pipeline:0.1.0"
"""The pipeline image's name as the chart defaults to it (spec.archive's CronJob)."""
README_DATABASE = "postgresql://app:pw@db/app"
"""The database URL of README's commands; the test's database takes its place."""


def _install_as_the_readme_says(
    cluster: Cluster, tools: DeployTools, home: Path, worker: str, operator: str
) -> str:
    """README's "On Kubernetes" commands, run as written (only the database URL is the test's):
    the images carry the names the chart defaults to and the README's Queue's app image, as a
    registry would give them (the kubelet does not pull what it has: `IfNotPresent`); `queue.yaml`
    is README's Queue. Returns the URL of its database, for this process."""
    readme = doc_blocks.blocks("README.md")
    (install,) = [b for b in readme if b.marker == "run-by tests/deploy/pods.py"]
    (queue_yaml,) = [b for b in readme if b.language == "yaml" and "kind: Queue" in b.code]
    pod_spec = yaml.safe_load(queue_yaml.code)["spec"]["workers"]["template"]["spec"]
    version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    for built, name in (
        (operator, f"docker.io/tablequeue/operator:{version}"),
        (worker, f"docker.io/tablequeue/worker:{version}"),
        (cluster.app_image, pod_spec["containers"][0]["image"]),
    ):
        cluster.node.load_image(built, name)
    folder = home / "readme"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "kubectl").symlink_to(cluster.plane.bin_dir / "kubectl")
    (folder / "bin" / "helm").symlink_to(tools.helm)
    (folder / "charts").symlink_to(ROOT / "charts")
    (folder / "queue.yaml").write_text(queue_yaml.code)
    pod_url, local_url = cluster.new_database()
    env = tool_env(tools, home, cluster.plane.kubeconfig)
    env["PATH"] = f"{folder / 'bin'}:{env['PATH']}"
    script = install.code.replace(README_DATABASE, pod_url)
    assert script != install.code, f"README's commands no longer use {README_DATABASE}"
    output = run(["bash", "-euo", "pipefail", "-c", script], env, cwd=folder)
    assert re.search(r"^send-order-confirmation\s", output, re.M), output
    return local_url


def _upgrade_for_the_scenarios(
    cluster: Cluster, tools: DeployTools, home: Path, worker: str, operator: str
) -> None:
    """`helm upgrade` to the images built here by their own names (never pulled) and a 2 s
    operator interval, so that the scenarios' scaling does not wait 10 s a step."""
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
    env = tool_env(tools, home, cluster.plane.kubeconfig)
    command: list[str | Path] = [tools.helm, "upgrade", RELEASE, CHART, "--reuse-values"]
    run([*command, "--namespace", RELEASE_NAMESPACE, "--wait", *settings], env)
    for component in ("operator", "api"):
        cluster.wait_ready(RELEASE_NAMESPACE, f"app.kubernetes.io/name=tablequeue-{component}")


def get_status(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError:
        return 0, ""


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


def scaled_workers(
    cluster: Cluster, mode: str, min_replicas: int, cooldown: float, **workers: Any
) -> dict[str, Any]:
    """A Queue's `workers` for the scaling scenarios: the example app (listening at once), up to
    3 replicas of 100 messages each, scaled by `mode`."""
    autoscaling = {
        "mode": mode,
        "minReplicas": min_replicas,
        "maxReplicas": 3,
        "messagesPerReplica": 100,
        "cooldownSeconds": cooldown,
    }
    return {"template": app_template(cluster, start_delay=0), **workers, "autoscaling": autoscaling}


def fixed_workers(
    cluster: Cluster, replicas: int, batch_size: int, concurrency: int
) -> dict[str, Any]:
    """A Queue's `workers` for the lifecycle scenarios: the example app, `replicas` pods."""
    return {
        "template": app_template(cluster),
        "batchSize": batch_size,
        "concurrency": concurrency,
        "autoscaling": {"mode": "None", "minReplicas": replicas, "maxReplicas": replicas},
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

    def apply_without_workers(self, **spec: Any) -> None:
        """The Queue with no worker pods (the test plays the worker), once it is Ready."""
        no_workers = {"autoscaling": {"mode": "None", "minReplicas": 0, "maxReplicas": 1}}
        self.apply(workers=no_workers, **spec)
        wait_ready(self.cluster.plane, self.name, self.namespace, timeout=120)

    def complete(self, count: int) -> None:
        """Lease `count` messages and record them done, as a worker would."""
        with connect(self.url) as db:
            target = db.queue(self.name)
            leased = target.lease("test", count).messages
            target.complete("test", [Completion(message) for message in leased])

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
        return Counter(message_id for message_id, _pod in self._records())

    def handled_by(self) -> dict[str, str]:
        """The pod that handled each message (the last one, if several did), from the records."""
        return dict(self._records())

    def _records(self) -> Iterator[tuple[str, str]]:
        """(message id, pod) for each message the app handled: one line per message, per pod."""
        for path in self.cluster.records.glob(f"{self.name}-*.tsv"):
            for line in path.read_text().splitlines():
                message_id, pod, _attempts = line.split("\t")
                yield message_id, pod

    def drained(self, total: int) -> dict[str, int] | None:
        found = self.statuses()
        return found if found.get("Processed", 0) == total else None

    def events(self, kind: str) -> list[dict[str, Any]]:
        """The namespace's events about objects of `kind` (Pod, HorizontalPodAutoscaler, ...)."""
        found = self.cluster.plane.kubectl_json("get", "events", "-n", self.namespace)["items"]
        return [e for e in found if e["involvedObject"]["kind"] == kind]

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


def worker_status(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in pod["status"]["containerStatuses"] if s["name"] == "tablequeue-worker"]


def deployment(scenario: Scenario) -> str:
    return f"deployment/{scenario.name}-workers"


def _label(name: str) -> str:
    """A Kubernetes label's name as Prometheus' service discovery writes it."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def scrape_configs(cluster: Cluster) -> list[dict[str, Any]]:
    """What prometheus-operator makes of the chart's PodMonitor and ServiceMonitors: Prometheus'
    own Kubernetes service discovery against the test API server (pods, endpoint slices), kept
    to the monitors' selectors, namespaces and port names, with the job, target labels and
    relabelings prometheus-operator gives."""
    plane = cluster.plane
    discovery = {
        "api_server": plane.server,
        "tls_config": {
            "ca_file": str(plane.pki / "ca.crt"),
            "cert_file": str(plane.pki / "admin.crt"),
            "key_file": str(plane.pki / "admin.key"),
        },
    }
    configs: list[dict[str, Any]] = []
    monitors = plane.kubectl_json("get", "podmonitors,servicemonitors", "-n", RELEASE_NAMESPACE)
    for monitor in monitors["items"]:
        spec, name = monitor["spec"], monitor["metadata"]["name"]
        pods = monitor["kind"] == "PodMonitor"
        owner = "__meta_kubernetes_pod_label_" if pods else "__meta_kubernetes_service_label_"
        selected = [
            {"source_labels": [owner + _label(key)], "regex": value, "action": "keep"}
            for key, value in spec["selector"]["matchLabels"].items()
        ]
        port = (
            "__meta_kubernetes_pod_container_port_name"
            if pods
            else "__meta_kubernetes_endpointslice_port_name"
        )
        job = (
            {"target_label": "job", "replacement": f"{RELEASE_NAMESPACE}/{name}"}
            if pods
            else {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job"}
        )
        sd = {"role": "pod" if pods else "endpointslice", **discovery}
        if not spec.get("namespaceSelector", {}).get("any"):
            sd["namespaces"] = {"names": [RELEASE_NAMESPACE]}
        for number, endpoint in enumerate(spec.get("podMetricsEndpoints") or spec["endpoints"]):
            relabel = [
                *selected,
                {"source_labels": [port], "regex": endpoint["port"], "action": "keep"},
                {
                    "source_labels": ["__meta_kubernetes_pod_phase"],
                    "regex": "(Failed|Succeeded)",
                    "action": "drop",
                },
                {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
                {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
                {
                    "source_labels": ["__meta_kubernetes_pod_container_name"],
                    "target_label": "container",
                },
                job,
                *(
                    {"source_labels": r["sourceLabels"], "target_label": r["targetLabel"]}
                    for r in endpoint.get("relabelings", [])
                ),
            ]
            configs.append(
                {
                    "job_name": f"{monitor['kind']}/{RELEASE_NAMESPACE}/{name}/{number}",
                    "metrics_path": endpoint.get("path", "/metrics"),
                    "honor_labels": bool(endpoint.get("honorLabels")),
                    "kubernetes_sd_configs": [sd],
                    "relabel_configs": relabel,
                }
            )
    return configs
