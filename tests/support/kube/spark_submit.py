"""spark-submit in cluster mode from this machine against a test control plane: the command
`tablequeue.pipeline.on_kubernetes.submit_command` writes, with the submission's credentials."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tablequeue.pipeline.on_kubernetes import IMAGE_MAIN

from .control_plane import ControlPlane


def spark_submit(
    plane: ControlPlane,
    namespace: str,
    service_account: str,
    command: list[str],
    work: Path,
    *settings: str,
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    """Run `command` (the venv's spark-submit) as `service_account` of `namespace`: its token and
    the plane's CA are the client's credentials (Spark's Kubernetes client reads no EC client key,
    which the admin's is). `settings` (`key=value`) go before the main resource."""
    with tempfile.NamedTemporaryFile("w", dir=work, suffix=".token", delete=False) as file:
        file.write(
            plane.kubectl("create", "token", service_account, "-n", namespace).stdout.strip()
        )
    token = file.name
    command = list(command)
    index = command.index(IMAGE_MAIN)
    command[index:index] = [
        f"--conf=spark.kubernetes.authenticate.submission.caCertFile={plane.pki / 'ca.crt'}",
        f"--conf=spark.kubernetes.authenticate.submission.oauthTokenFile={token}",
        *(f"--conf={setting}" for setting in settings),
    ]
    bin_dir = Path(sys.executable).parent
    return subprocess.run(
        [str(bin_dir / command[0]), *command[1:]],
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"},
        cwd=work,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
