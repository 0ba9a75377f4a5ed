"""scripts/build-deploy-tools builds tools one by one: a run that wants only some (the node's
chart install: helm and the CRDs) returns once they are there, while another run holds the lock
and goes on building the others (tests/support/go_builds.py relies on it on a cold machine)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

from tests.support.deploy_tools import BUILD_SCRIPT, DeployTools


def _cache_like(tools: DeployTools, cache: Path, *built: str) -> Path:
    """A cache folder for the same pins as `tools` in which only `built` are there."""
    root = cache / "tablequeue" / "deploy-tools" / tools.root.name
    (root / "bin").mkdir(parents=True)
    shutil.copy(tools.root / "fingerprint", root / "fingerprint")
    for tool in built:
        shutil.copy(tools.root / "bin" / tool, root / "bin" / tool)
    return root


def test_a_run_wanting_some_tools_returns_when_they_are_built_under_another_runs_lock(
    chart_tools: DeployTools, tmp_path: Path
) -> None:
    root = _cache_like(chart_tools, tmp_path, "helm")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run, building
        done = subprocess.run(
            [BUILD_SCRIPT, "helm"], env=env, capture_output=True, text=True, timeout=60
        )
        assert (done.returncode, done.stdout.strip()) == (0, str(root)), done.stderr
        waiting = subprocess.Popen(
            [BUILD_SCRIPT, "kubeconform"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert waiting.stderr is not None
            said = waiting.stderr.readline()
            assert said == "build-deploy-tools: another run is building; waiting for: kubeconform\n"
            # the other run renames it into place
            shutil.copy(chart_tools.kubeconform, root / "bin" / ".kubeconform")
            (root / "bin" / ".kubeconform").rename(root / "bin" / "kubeconform")
            stdout, _ = waiting.communicate(timeout=60)
        finally:
            waiting.kill()
        assert (waiting.returncode, stdout.strip()) == (0, str(root))
    missing = subprocess.run([BUILD_SCRIPT, "--built", "prometheus"], env=env, check=False)
    assert missing.returncode == 1


def test_an_unknown_tool_is_refused_by_name(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    refused = subprocess.run(
        [BUILD_SCRIPT, "helm", "kubctl"], env=env, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2
    assert "unknown tool: kubctl (one of: helm crds " in refused.stderr
    assert not (tmp_path / "tablequeue").exists()
