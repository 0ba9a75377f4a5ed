"""The worker sidecar, run as a local process exactly as the Deployment describes it (there is no
kubelet)."""

from __future__ import annotations

import base64
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tablequeue import connect
from tests.operator.conftest import (
    messages,
    status_of,
    wait,
)
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import (
    Operator,
    apply,
    get,
    queue,
    secret,
    wait_ready,
)
from tests.support.ports import free_port

# The first test may build the control plane (minutes on a cold machine); later runs start it in
# seconds from the user's cache folder.
pytestmark = pytest.mark.timeout(600)


POD_NAME = "sidecar-workers-5d8f7-x2k4p"


def _container_environment(
    kube: ControlPlane, namespace: str, container: dict[str, Any]
) -> dict[str, str]:
    """The container's env as the kubelet would set it (values, secretKeyRefs, the pod's name)."""
    env: dict[str, str] = {}
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
            continue
        if item["valueFrom"].get("fieldRef", {}).get("fieldPath") == "metadata.name":
            env[item["name"]] = POD_NAME
            continue
        ref = item["valueFrom"]["secretKeyRef"]
        data = kube.kubectl_json("get", "secret", ref["name"], "-n", namespace)["data"]
        env[item["name"]] = base64.b64decode(data[ref["key"]]).decode()
    return env


def test_the_worker_sidecar_runs_as_the_deployment_describes_it(
    kube: ControlPlane, namespace: str, operator: Operator, postgres_url: str, tmp_path: Path
) -> None:
    apply(
        kube,
        secret("db", namespace, postgres_url),
        queue(
            "sidecar",
            namespace,
            keepProcessedFor="forever",
            workers={
                "handler": {"python": "tablequeue.examples:noop"},
                "pollInterval": {"minSeconds": 0.05, "maxSeconds": 0.5},
            },
        ),
    )
    wait_ready(kube, "sidecar", namespace)
    deployment = get(kube, "deployment", "sidecar-workers", namespace)
    assert deployment is not None
    [container] = [
        c
        for c in deployment["spec"]["template"]["spec"]["containers"]
        if c["name"] == "tablequeue-worker"
    ]
    command = container["command"]
    assert command[0] == "tablequeue"
    command = [sys.executable, "-m", "tablequeue", *command[1:], *container.get("args", [])]
    env = _container_environment(kube, namespace, container)
    assert env["TABLEQUEUE_DB"] == postgres_url
    # A Pod has a network namespace of its own; here the port must be one that is free.
    [port] = container["ports"]
    assert env["TABLEQUEUE_PORT"] == str(port["containerPort"])
    env["TABLEQUEUE_PORT"] = str(free_port())
    base = {k: v for k, v in os.environ.items() if not k.startswith("TABLEQUEUE_")}

    with connect(postgres_url) as db:
        db.queue("sidecar").enqueue_many(messages(40))
    log = tmp_path / "worker.log"
    with log.open("wb") as output:
        worker = subprocess.Popen(
            command,
            env=base | env,
            cwd=tmp_path,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        probe = container["readinessProbe"]["httpGet"]["path"]
        url = f"http://127.0.0.1:{env['TABLEQUEUE_PORT']}{probe}"

        def ready() -> bool:
            assert worker.poll() is None, log.read_text()
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    return int(response.status) == 200
            except OSError:
                return False

        wait(ready)
        wait(lambda: status_of(kube, "sidecar", namespace).get("counts") == {"Processed": 40})
        with connect(postgres_url) as db:
            sidecar = db.queue("sidecar")
            sidecar.enqueue_many(messages(10, status="Pending"))
            wait(lambda: sidecar.stats().counts == {"Processed": 50})
            # The worker heartbeats under its pod's name; the operator counts it in WorkersReady.
            [seen] = wait(lambda: db.workers("sidecar"))
            assert seen.host == POD_NAME and seen.state == "live"

        def workers_ready() -> str | None:
            conditions = status_of(kube, "sidecar", namespace).get("conditions") or []
            message = {c["type"]: c for c in conditions}.get("WorkersReady", {}).get("message")
            return message if message and "; 1 heartbeating" in message else None

        # No pod runs here (the worker runs beside the test), so none is ready; the autoscaler
        # may already have scaled the drained queue from 1 to 0 replicas.
        assert re.match(r"0 of [01] worker replicas ready", wait(workers_ready, timeout=60))
    finally:
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(timeout=30)
    assert code == 0, log.read_text()
