"""Dockerfile.worker and Dockerfile.operator, built with podman for real and run: the worker image
drains a queue of a throwaway PostgreSQL, and of a throwaway MariaDB through PyMySQL and through
pyodbc with MariaDB's ODBC driver, and answers /readyz, and serves the HTTP API and admin UI;
the operator image answers its liveness and reconciles a Queue in the test control plane; all
as a non-root user on a read-only root file system (as the chart and the operator run them).

The builds start from a local Debian base (tests/deploy/containers.py: no image registry here)
and are cached by content: a warm machine builds nothing. Marked slow.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tablequeue import Completion, NewMessage, connect
from tablequeue.pipeline.on_kubernetes import IMAGE_CLASSPATH, IMAGE_MAIN, IMAGE_PYTHON
from tablequeue.spec import QueueResource
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import apply, get, queue, secret, wait_ready
from tests.support.ports import free_port
from tests.support.waiting import wait_until

from .containers import (
    ULIMITS,
    build_image,
    build_pipeline_image,
    image_config,
    image_size,
    podman,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # a cold machine builds both images

MAX_IMAGE_MIB = {"worker": 300, "operator": 450, "pipeline": 1250}
"""Guards against bloat, above their sizes on the local Debian base (262 and 373 MiB, of which
153 MiB are the base; the operator's kubernetes client alone is 128 MiB installed; unixODBC and
MariaDB's ODBC driver add 4.2 MiB to each, PyMySQL and pyodbc 1.6 MiB: 256 and 381 MiB before;
the operator image was 386 MiB before it installed only its extras: no FastAPI, OpenTelemetry).
The pipeline image is 1,158 MiB: its virtualenv 729 MiB (pyspark's jars alone 462), Java 17 and
Debian's PostgreSQL JDBC driver 260, the other JDBC drivers 16."""


@pytest.fixture(scope="module")
def worker_image() -> str:
    return build_image("Dockerfile.worker", "tablequeue-worker")


@pytest.fixture(scope="module")
def operator_image() -> str:
    return build_image("Dockerfile.operator", "tablequeue-operator")


@pytest.fixture(scope="module")
def pipeline_image(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_pipeline_image(tmp_path_factory.mktemp("jars"))


class Container:
    """A detached container; its log goes into the assertion message of a failed wait."""

    def __init__(self, image: str, *args: str, env: dict[str, str], volumes: list[str]) -> None:
        options = [f"--env={key}={value}" for key, value in env.items()]
        options += [f"--volume={volume}" for volume in volumes]
        self.id = podman(
            "run",
            "--detach",
            "--network=host",
            "--read-only",
            *ULIMITS,
            *options,
            image,
            *args,
        ).stdout.strip()

    def logs(self) -> str:
        result = podman("logs", self.id, check=False)
        return (result.stdout + result.stderr)[-6000:]

    def running(self) -> bool:
        state = podman("inspect", "--format", "{{.State.Running}}", self.id, check=False)
        return state.stdout.strip() == "true"

    def becomes_healthy(self) -> None:
        """The image's HEALTHCHECK (`tablequeue healthcheck`) passes within the three tries it
        allows (`--retries=3`): one try may time out on a loaded host without the container
        being unhealthy. Fails with every try's output and the container's log."""
        failures = []
        for _ in range(3):
            check = podman("healthcheck", "run", self.id, check=False)
            if check.returncode == 0:
                return
            failures.append((check.stdout + check.stderr).strip())
        raise AssertionError(f"HEALTHCHECK failed 3 times: {failures}\n{self.logs()}")

    def stop(self) -> int:
        """SIGTERM (as Kubernetes stops a pod), then the exit code."""
        podman("stop", "--time=20", self.id, check=False)
        code = podman("inspect", "--format", "{{.State.ExitCode}}", self.id).stdout.strip()
        return int(code)

    def remove(self) -> None:
        podman("rm", "--force", self.id, check=False)


def get_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (urllib.error.URLError, OSError):
        return 0


@pytest.fixture
def containers() -> Iterator[list[Container]]:
    started: list[Container] = []
    yield started
    for container in started:
        container.remove()


def test_images_are_small_non_root_and_labelled(worker_image: str, operator_image: str) -> None:
    for image, command in ((worker_image, "worker"), (operator_image, "operator")):
        size = image_size(image) / 1024 / 1024
        print(f"{image}: {size:.0f} MiB")
        assert size < MAX_IMAGE_MIB[command]
        assert image_config(image, "{{.Config.User}}") == "65532:65532"
        assert json.loads(image_config(image, "{{json .Config.Entrypoint}}")) == ["tablequeue"]
        assert json.loads(image_config(image, "{{json .Config.Cmd}}")) == [command]
        labels = json.loads(image_config(image, "{{json .Config.Labels}}"))
        assert labels["org.opencontainers.image.title"] == f"tablequeue-{command}"
        assert labels["org.opencontainers.image.version"] == "0.1.0"
        assert "CMD" in image_config(image, "{{json .Config.Healthcheck}}")


def test_images_carry_their_extras_only(worker_image: str, operator_image: str) -> None:
    """Each image installs its processes' extras (requirements/*.in): the operator image has no
    FastAPI or uvicorn (the API runs from the worker image), and says so in one line."""
    refused = podman("run", "--rm", *ULIMITS, operator_image, "api", "--db=sqlite://", check=False)
    assert refused.returncode == 1
    # podman may warn on stderr before the container's own line.
    assert refused.stderr.strip().splitlines()[-1] == (
        "error: tablequeue api needs fastapi, uvicorn, jinja2, not installed: "
        "run pip install 'tablequeue[api]'"
    )
    for image, present, absent in (
        (worker_image, "aiohttp, fastapi, opentelemetry.sdk", "kubernetes"),
        (operator_image, "kopf, kubernetes", "opentelemetry"),
    ):
        script = (
            f"import {present}\ntry:\n    import {absent}\nexcept ImportError:\n    print('ok')"
        )
        found = podman(
            "run", "--rm", *ULIMITS, "--entrypoint=python3", image, "-c", script, check=False
        )
        assert (found.returncode, found.stdout.strip()) == (0, "ok"), found.stderr


IMAGE_ENGINES = {
    "postgresql": "postgres_url",
    "mariadb": "mariadb_url",
    "mariadb-odbc": "mariadb_odbc_url",
}
"""The engines the worker image drains a queue of, each a fixture giving a fresh database's URL:
PostgreSQL (psycopg), MariaDB through PyMySQL (`mariadb://`) and through pyodbc with the image's
unixODBC and MariaDB ODBC driver (`mysql+pyodbc://...?driver=MariaDB+Unicode`)."""


@pytest.mark.parametrize("engine", IMAGE_ENGINES)
def test_images_worker_drains_a_queue_and_answers_readyz(
    worker_image: str, engine: str, request: pytest.FixtureRequest, containers: list[Container]
) -> None:
    url = request.getfixturevalue(IMAGE_ENGINES[engine])
    with connect(url) as db:
        db.apply(QueueResource.from_name("image-orders"))
        db.queue("image-orders").enqueue_many([NewMessage(message={"n": n}) for n in range(50)])
    port = free_port()
    worker = Container(
        worker_image,
        env={
            "TABLEQUEUE_DB": url,
            "TABLEQUEUE_QUEUE": "image-orders",
            "TABLEQUEUE_HANDLER": "python:tablequeue.examples:noop",
            "TABLEQUEUE_PORT": str(port),
        },
        volumes=[],
    )
    containers.append(worker)

    def ready() -> bool:
        assert worker.running(), f"the worker exited:\n{worker.logs()}"
        return get_status(f"http://127.0.0.1:{port}/readyz") == 200

    wait_until(ready, timeout=60)

    def drained() -> bool:
        with connect(url) as db:
            stats = db.queue("image-orders").stats()
        return stats.backlog == 0 and not stats.counts

    wait_until(drained, timeout=60)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=3) as response:
        metrics = response.read().decode()
    assert 'tablequeue_worker_messages_total{outcome="processed",queue="image-orders"} 50.0' in (
        metrics
    )
    worker.becomes_healthy()
    assert worker.stop() == 0, worker.logs()  # SIGTERM: a clean stop


def test_images_worker_image_serves_the_api(
    worker_image: str, postgres_url: str, containers: list[Container]
) -> None:
    """The chart runs `tablequeue api` from the worker image."""
    with connect(postgres_url) as db:
        db.apply(QueueResource.from_name("image-api"))
    port = free_port()
    api = Container(
        worker_image,
        "api",
        "--host=127.0.0.1",
        f"--port={port}",
        env={"TABLEQUEUE_DB": postgres_url},
        volumes=[],
    )
    containers.append(api)

    def ready() -> bool:
        assert api.running(), f"the API exited:\n{api.logs()}"
        return get_status(f"http://127.0.0.1:{port}/readyz") == 200

    wait_until(ready, timeout=60)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/queues/image-api", timeout=5) as answer:
        assert json.loads(answer.read())["name"] == "image-api"
    assert get_status(f"http://127.0.0.1:{port}/ui") == 200
    api.becomes_healthy()  # on the --port given, not the image's TABLEQUEUE_PORT


@pytest.fixture
def image_kubeconfig(operator_kubeconfig: Path, tmp_path: Path) -> Path:
    """The operator's ServiceAccount kubeconfig with the CA inlined, readable by the image's
    user (the control plane's files are root's, mode 0600)."""
    config = json.loads(operator_kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    ca = Path(cluster.pop("certificate-authority")).read_bytes()
    cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    path.chmod(0o644)
    return path


def test_images_operator_answers_liveness_and_reconciles(
    operator_image: str,
    image_kubeconfig: Path,
    kube: ControlPlane,
    namespace: str,
    postgres_url: str,
    containers: list[Container],
) -> None:
    liveness, metrics = free_port(), free_port()
    operator = Container(
        operator_image,
        "operator",
        f"--namespace={namespace}",
        "--interval=1",
        f"--liveness-port={liveness}",
        f"--metrics-port={metrics}",
        env={"KUBECONFIG": "/config/kubeconfig"},
        volumes=[f"{image_kubeconfig}:/config/kubeconfig:ro"],
    )
    containers.append(operator)

    def live() -> bool:
        assert operator.running(), f"the operator exited:\n{operator.logs()}"
        return get_status(f"http://127.0.0.1:{liveness}/healthz") == 200

    wait_until(live, timeout=90)
    apply(kube, secret("db", namespace, postgres_url))
    apply(kube, queue("image-queue", namespace, "db"))
    wait_ready(kube, "image-queue", namespace, timeout=60)
    deployment = get(kube, "deployment", "image-queue-workers", namespace)
    assert deployment is not None
    [worker] = deployment["spec"]["template"]["spec"]["containers"]
    assert worker["image"] == "tablequeue/worker:0.1.0"  # the chart's worker image by default
    assert get_status(f"http://127.0.0.1:{metrics}/metrics") == 200
    assert operator.stop() == 0, operator.logs()


def test_images_pipeline_image_is_non_root_and_labelled(pipeline_image: str) -> None:
    size = image_size(pipeline_image) / 1024 / 1024
    print(f"{pipeline_image}: {size:.0f} MiB")
    assert size < MAX_IMAGE_MIB["pipeline"]
    assert image_config(pipeline_image, "{{.Config.User}}") == "65532:65532"
    labels = json.loads(image_config(pipeline_image, "{{json .Config.Labels}}"))
    assert labels["org.opencontainers.image.title"] == "tablequeue-pipeline"
    assert labels["org.opencontainers.image.version"] == "0.1.0"
    # What the spark-submit of pipeline/on_kubernetes.py names, and the drivers Spark gets.
    script = (
        "import os, sys\n"
        "from tablequeue.pipeline.spark import driver_jars\n"
        f"assert os.path.isfile({IMAGE_MAIN.removeprefix('local://')!r})\n"
        f"assert sys.executable == {IMAGE_PYTHON!r}\n"
        "print(' '.join(sorted(os.path.basename(jar) for jar in driver_jars())))"
    )
    found = podman("run", "--rm", *ULIMITS, pipeline_image, "python3", "-c", script)
    jars = found.stdout.split()
    assert "postgresql.jar" in jars
    assert any(jar.startswith("mariadb-java-client-") for jar in jars), jars
    assert any(jar.startswith("sqlite-jdbc-") for jar in jars), jars
    java = podman("run", "--rm", *ULIMITS, pipeline_image, "java", "-version")
    assert 'version "17.' in java.stderr


def test_images_pipeline_image_enqueues_and_archives_with_local_spark(
    pipeline_image: str, postgres_url: str, tmp_path: Path
) -> None:
    """The enqueue as Spark on Kubernetes starts a driver (the image's `driver` entrypoint:
    spark-submit in client mode, the JDBC drivers on the class path as on_kubernetes puts them)
    reading a JDBC source; the archive as the CronJob of spec.archive runs it. Local Spark,
    PostgreSQL on the host's loopback, a read-only root file system."""
    with connect(postgres_url) as db:
        db.apply(QueueResource.from_name("image-catalogue", idempotent=True))
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("CREATE TABLE catalogue (sku text PRIMARY KEY, price integer)")
        connection.execute(
            "INSERT INTO catalogue SELECT 'S-' || n, n FROM generate_series(1, 200) AS n"
        )
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)  # the image's user writes the archive there

    def run(*command: str) -> str:
        result = podman(
            "run", "--rm", "--network=host", "--read-only", *ULIMITS,
            f"--env=TABLEQUEUE_DB={postgres_url}", "--env=SPARK_DRIVER_BIND_ADDRESS=127.0.0.1",
            "--env=SPARK_LOCAL_IP=127.0.0.1", f"--volume={data}:/data", pipeline_image, *command,
        )  # fmt: skip
        return result.stdout

    enqueued = run(
        "driver", "--master", "local[2]", "--conf", "spark.ui.enabled=false",
        "--conf", f"spark.driver.extraClassPath={IMAGE_CLASSPATH}", IMAGE_MAIN,
        "enqueue", "image-catalogue", postgres_url, "--format", "jdbc", "--table", "catalogue",
        "--id-column", "sku", "--rejects", "/data/rejects", "--json",
    )  # fmt: skip
    result = json.loads(enqueued.strip().splitlines()[-1])
    assert (result["inserted"], result["rejected"]) == (200, 0), enqueued
    with connect(postgres_url) as db:
        catalogue = db.queue("image-catalogue")
        assert catalogue.stats().counts == {"Pending": 200}
        leased = catalogue.lease("test", 200).messages
        catalogue.complete("test", [Completion(message) for message in leased])
        assert catalogue.stats().counts == {"Processed": 200}

    archived = run(
        "python3", "-m", "tablequeue.pipeline", "archive", "image-catalogue",
        "--to", "/data/archive", "--older-than", "0s", "--master", "local[2]",
        "--conf", "spark.ui.enabled=false", "--json",
    )  # fmt: skip
    [outcome] = json.loads(archived.strip().splitlines()[-1])
    assert (outcome["archived"], outcome["deleted"]) == (200, 200), archived
    with connect(postgres_url) as db:
        assert not db.queue("image-catalogue").stats().counts
    written = list(
        (data / "archive" / "queue=image-catalogue" / "status=Processed").rglob("*.parquet")
    )
    assert written, sorted(str(p) for p in (data / "archive").rglob("*"))
