"""A throwaway Spark standalone cluster on loopback: one master and its workers, started from the
pinned pyspark's own distribution (`spark-class org.apache.spark.deploy.master.Master` and
`...worker.Worker`), each worker with its own work folder, one core and a little memory.

Used by tests/pipeline/test_cluster.py and bench/pipeline_cluster.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

import tablequeue.pipeline
from tests.support.ports import free_port
from tests.support.processes import Daemons

SPARK_HOME = Path(pyspark.__file__).parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
PIPELINE_SCRIPT = Path(tablequeue.pipeline.__file__).parent / "__main__.py"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
START_TIMEOUT = 120.0


class SparkClusterError(AssertionError):
    pass


@dataclass
class SparkCluster:
    master_url: str
    ui_url: str
    daemons: Daemons
    worker_names: list[str] = field(default_factory=list)

    def state(self) -> dict[str, object]:
        """The master's JSON status page: workers, applications."""
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=5) as answer:
            data: dict[str, object] = json.load(answer)
        return data

    def alive_workers(self) -> int:
        workers = self.state().get("workers", [])
        assert isinstance(workers, list)
        return sum(1 for worker in workers if worker.get("state") == "ALIVE")

    def executor_pids(self) -> list[int]:
        """The executor JVMs this cluster's workers started (children of our Worker JVMs: other
        test runs' executors on the machine are never touched)."""
        workers = {self.daemons.pid(name) for name in self.worker_names}
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                command = (entry / "cmdline").read_bytes().split(b"\0")
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            if parent in workers and EXECUTOR_CLASS.encode() in command:
                found.append(int(entry.name))
        return sorted(found)

    def submit(self, executors: int, *arguments: str, log: Path) -> subprocess.Popen[bytes]:
        """`spark-submit pipeline/__main__.py ARGUMENTS` on this cluster with `executors`
        executors of one core (512 MB each), its output (the driver's stdout, stderr and Spark's
        log) into `log`."""
        with log.open("wb") as out:
            return subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "spark-submit"),
                    *("--master", self.master_url, "--executor-cores", "1"),
                    *("--total-executor-cores", str(executors), "--executor-memory", "512m"),
                    *("--conf", "spark.ui.enabled=false"),
                    str(PIPELINE_SCRIPT),
                    *arguments,
                ],
                env={
                    **spark_environment(),
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                    "PYSPARK_PYTHON": sys.executable,
                    "PYSPARK_DRIVER_PYTHON": sys.executable,
                },
                cwd="/",
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def kill_an_executor(self) -> int:
        """SIGKILL one executor JVM of this cluster (the one started first); its pid."""
        pids = self.executor_pids()
        if not pids:
            raise SparkClusterError("no executor of this cluster is running")
        os.kill(pids[0], signal.SIGKILL)
        return pids[0]


def spark_environment() -> dict[str, str]:
    """What every process of the cluster (and a spark-submit against it) runs with."""
    return {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        # Its REST submission server would listen on the fixed port 6066: nothing uses it.
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }


@contextlib.contextmanager
def spark_cluster(
    folder: Path, workers: int = 2, cores: int = 1, memory: str = "1g"
) -> Iterator[SparkCluster]:
    """A master and `workers` workers (`cores` cores and `memory` each) on free loopback ports;
    yields once the master lists every worker ALIVE; always stopped."""
    logs = folder / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    daemons = Daemons(logs, folder, SparkClusterError)
    master_port, ui_port = free_port(), free_port()
    cluster = SparkCluster(
        master_url=f"spark://127.0.0.1:{master_port}",
        ui_url=f"http://127.0.0.1:{ui_port}",
        daemons=daemons,
    )
    environment = spark_environment()
    try:
        daemons.start(
            "master",
            [
                *(str(SPARK_CLASS), "org.apache.spark.deploy.master.Master"),
                *("--host", "127.0.0.1", "--port", str(master_port)),
                *("--webui-port", str(ui_port)),
            ],
            env=environment,
        )
        for number in range(workers):
            work = folder / f"worker-{number}"
            work.mkdir(exist_ok=True)
            name = f"worker-{number}"
            daemons.start(
                name,
                [
                    *(str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker"),
                    *("--host", "127.0.0.1", "--port", str(free_port())),
                    *("--webui-port", str(free_port())),
                    *("--cores", str(cores), "--memory", memory, "--work-dir", str(work)),
                    cluster.master_url,
                ],
                env=environment,
            )
            cluster.worker_names.append(name)
        deadline = time.monotonic() + START_TIMEOUT
        daemons.wait_ready("master", deadline, lambda: _answers(cluster))
        for name in cluster.worker_names:
            daemons.wait_ready(name, deadline, lambda: cluster.alive_workers() == workers)
        yield cluster
    finally:
        daemons.stop_all()


def _answers(cluster: SparkCluster) -> bool:
    """Our master's status page answers (an HTML page or another master's is not it: the UI
    port could have been taken between the check and the bind, and Spark then takes the next)."""
    try:
        return cluster.state().get("url") == cluster.master_url
    except (OSError, ValueError):
        return False
