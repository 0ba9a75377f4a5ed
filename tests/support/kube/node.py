"""A real Kubernetes node beside the test control plane: containerd, kubelet and kube-proxy.

    with cluster(crds=[Path("crds/queue.yaml")]) as (plane, node):
        node.load_image("localhost/tablequeue-worker:test-...")
        plane.kubectl("apply", "-f", "deployment.yaml")  # its pods run

What it is made of, all started by the tests and stopped with them:
- Debian's containerd 1.6 (CRI v1; the pinned kubelet still accepts a runtime without the
  RuntimeConfig call and then takes its cgroup driver from its own configuration) with Debian's
  runc and CNI plugins, its state in a temporary folder and its socket there, so it never meets
  another containerd of this machine;
- the kubelet, kube-proxy (iptables mode, for the `kubernetes` Service the pods' in-cluster
  clients use) and kube-scheduler of the pinned `k8s.io/kubernetes` (scripts/build-control-plane);
- a bridge made here, `tq-node0` with 10.244.0.1/24: the node's address, the API server's (it
  listens there, not on loopback, for the pods to reach it) and the pods' gateway. The pods get
  routes to their subnet and to the Service range only: no default route, nothing leaves;
- images come from podman without a registry (`podman save` -> `ctr images import`), including
  the sandbox ("pause") image, a static C program built here from pause.c.

This machine has cgroup v1 (the kubelet is told `failCgroupV1: false` and the cgroupfs driver)
and no swap. Only one node can run on a machine at a time (the bridge, the iptables chains): a
lock file says so plainly instead of letting a second one break the first.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..ports import free_port
from ..processes import Daemons
from .control_plane import (
    SERVICE_CLUSTER_IP_RANGE,
    ControlPlane,
    build_control_plane,
    control_plane,
)

BRIDGE = "tq-node0"
GATEWAY = "10.244.0.1"
POD_SUBNET = "10.244.0.0/24"
NODE_NAME = "tablequeue-node"
PAUSE_SOURCE = Path(__file__).with_name("pause.c")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tablequeue" / "node"
CNI_BIN = Path("/usr/lib/cni")
CONTAINERD_NAMESPACE = "k8s.io"


class NodeError(RuntimeError):
    """The node could not start; the message has the components' logs."""


def _run(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise NodeError(f"{' '.join(args)} exited {result.returncode}: {result.stderr.strip()}")
    return result


class Node:
    """A running node (made by `node()`): its runtime, its logs and what tests do to it."""

    def __init__(self, base: Path, plane: ControlPlane) -> None:
        self.base = base
        self.plane = plane
        self.logs = base / "logs"
        self.socket = base / "containerd" / "containerd.sock"
        self.kubelet_port = free_port()
        self.kubelet_healthz_port = free_port()
        self._daemons = Daemons(self.logs, base, NodeError)

    # What tests use.

    def ctr(
        self, *args: str, check: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """containerd's own client against this node's runtime, in the CRI's namespace."""
        return _run(
            "ctr",
            f"--address={self.socket}",
            f"--namespace={CONTAINERD_NAMESPACE}",
            *args,
            check=check,
            timeout=timeout,
        )

    def load_image(self, tag: str, name: str = "") -> None:
        """Move an image podman has into the node's containerd (no registry in between), named
        `name` there if given (as a registry's image would be, so that the kubelet never pulls
        it: `IfNotPresent`)."""
        name = name or tag
        if name in self.ctr("images", "list", "--quiet").stdout.split():
            return
        with tempfile.TemporaryDirectory(prefix="tablequeue-image-") as folder:
            archive = Path(folder) / "image.tar"
            if name != tag:
                _run("podman", "tag", tag, name)
            try:
                _run("podman", "save", "--format=docker-archive", f"--output={archive}", name)
            finally:
                if name != tag:
                    _run("podman", "untag", tag, name)
            self.ctr("images", "import", "--no-unpack=false", str(archive))

    def kill_container(self, container_id: str) -> None:
        """SIGKILL a container's process through the runtime, as an OOM kill or a crash would."""
        self.ctr("tasks", "kill", "--signal=SIGKILL", container_id.removeprefix("containerd://"))

    def restart_kubelet(self) -> None:
        """Stop the kubelet and start it again (its pods keep running meanwhile)."""
        self._daemons.stop("kubelet")
        self._spawn("kubelet", self._kubelet_args())
        self._daemons.wait_ready("kubelet", time.monotonic() + 120, self._kubelet_healthy)

    def log(self, name: str) -> str:
        return self._daemons.log(name)

    # Start and stop.

    def _start(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        self.logs.mkdir()
        self._write_cni_config()
        self._spawn("containerd", ["containerd", f"--config={self._write_containerd_config()}"])
        self._daemons.wait_ready("containerd", deadline, self._containerd_ready)
        self._load_pause_image()
        self._spawn("kubelet", self._kubelet_args())
        self._daemons.wait_ready("kubelet", deadline, self._kubelet_healthy)
        self._spawn("kube-proxy", self._kube_proxy_args())
        self._daemons.wait_ready("kube-proxy", deadline, self._node_ready)

    def _containerd_ready(self) -> bool:
        return (
            self.socket.exists()
            and _run(
                "ctr", f"--address={self.socket}", "version", check=False, timeout=10
            ).returncode
            == 0
        )

    def _kubelet_healthy(self) -> bool:
        result = _run(
            "curl",
            "-sf",
            f"http://127.0.0.1:{self.kubelet_healthz_port}/healthz",
            check=False,
            timeout=10,
        )
        return result.returncode == 0

    def _node_ready(self) -> bool:
        found = self.plane.kubectl("get", "node", NODE_NAME, "-o", "json", check=False)
        if found.returncode != 0:
            return False
        conditions = json.loads(found.stdout)["status"].get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    def _write_cni_config(self) -> None:
        folder = self.base / "cni"
        folder.mkdir()
        config = {
            "cniVersion": "1.0.0",
            "name": "tablequeue",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": True,  # the bridge has GATEWAY; no default route (see routes)
                    "ipMasq": False,
                    "hairpinMode": True,  # a pod reaches itself through a Service
                    "ipam": {
                        "type": "host-local",
                        "dataDir": str(self.base / "cni-ipam"),
                        "ranges": [[{"subnet": POD_SUBNET, "gateway": GATEWAY}]],
                        "routes": [{"dst": SERVICE_CLUSTER_IP_RANGE, "gw": GATEWAY}],
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        }
        (folder / "10-tablequeue.conflist").write_text(json.dumps(config, indent=2))

    def _write_containerd_config(self) -> Path:
        root = self.base / "containerd"
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        path = root / "config.toml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(
            f"""version = 2
root = "{root / "root"}"
state = "{root / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "{self.socket}"
[ttrpc]
  address = "{root / "ttrpc.sock"}"
[debug]
  address = ""
[metrics]
  address = ""
[{cri}]
  sandbox_image = "{pause_image_tag()}"
  stream_server_address = "127.0.0.1"
  enable_selinux = false
  # This machine's root may not lower an oom_score_adj (no CAP_SYS_RESOURCE): the kubelet's
  # values for system-critical pods (-998) are clamped to containerd's own instead.
  restrict_oom_score_adj = true
  # The pods' network namespaces under the state folder, not /var/run/netns: the clean-up
  # unmounts them with the rest of the node's mounts and never meets another runtime's.
  netns_mounts_under_state_dir = true
[{cri}.cni]
  bin_dir = "{CNI_BIN}"
  conf_dir = "{self.base / "cni"}"
[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[{cri}.containerd.runtimes.runc.options]
  BinaryName = "{shutil.which("runc") or "/usr/sbin/runc"}"
  SystemdCgroup = false
"""
        )
        return path

    def _load_pause_image(self) -> None:
        tag = pause_image_tag()
        if tag in self.ctr("images", "list", "--quiet").stdout.split():
            return
        build_pause_image()
        self.load_image(tag)

    def _kubelet_args(self) -> list[str]:
        config = self.base / "kubelet.yaml"
        pki = self.plane.pki
        if not config.exists():
            settings: dict[str, Any] = {
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "kind": "KubeletConfiguration",
                "address": GATEWAY,
                "port": self.kubelet_port,
                "readOnlyPort": 0,
                "healthzBindAddress": "127.0.0.1",
                "healthzPort": self.kubelet_healthz_port,
                "authentication": {
                    "anonymous": {"enabled": False},
                    "webhook": {"enabled": True},
                    "x509": {"clientCAFile": str(pki / "ca.crt")},
                },
                "authorization": {"mode": "Webhook"},
                # This machine: cgroup v1 (refused unless told), no systemd, no swap.
                "failCgroupV1": False,
                "cgroupDriver": "cgroupfs",
                "failSwapOn": False,
                "containerRuntimeEndpoint": f"unix://{self.socket}",
                # A shared disk: never evict pods or collect the imported images over its use.
                "evictionHard": {
                    "memory.available": "100Mi",
                    "nodefs.available": "1%",
                    "imagefs.available": "1%",
                    "nodefs.inodesFree": "1%",
                },
                "imageGCHighThresholdPercent": 100,
                "imageGCLowThresholdPercent": 99,
                "serializeImagePulls": False,
                "resolvConf": "/etc/resolv.conf",
                "podLogsDir": str(self.base / "pod-logs"),
                # Pods see their new Secrets and ConfigMaps, and the node its status, quickly.
                "syncFrequency": "5s",
                "nodeStatusUpdateFrequency": "2s",
            }
            config.write_text(json.dumps(settings, indent=2))
        return [
            "kubelet",
            f"--config={config}",
            f"--kubeconfig={self.plane.kubeconfig}",
            f"--root-dir={self.base / 'kubelet'}",
            f"--cert-dir={self.base / 'kubelet-pki'}",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={GATEWAY}",
            "--v=1",
        ]

    def _kube_proxy_args(self) -> list[str]:
        config = self.base / "kube-proxy.yaml"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
                    "kind": "KubeProxyConfiguration",
                    "clientConnection": {"kubeconfig": str(self.plane.kubeconfig)},
                    "mode": "iptables",
                    "clusterCIDR": POD_SUBNET,
                    "hostnameOverride": NODE_NAME,
                    "bindAddress": GATEWAY,
                    "healthzBindAddress": f"127.0.0.1:{free_port()}",
                    "metricsBindAddress": f"127.0.0.1:{free_port()}",
                    "nodePortAddresses": [f"{GATEWAY}/32"],
                    "conntrack": {"maxPerCore": 0},  # leave the machine's conntrack table alone
                },
                indent=2,
            )
        )
        return ["kube-proxy", f"--config={config}"]

    def _spawn(self, name: str, args: list[str]) -> None:
        binary = args[0] if name == "containerd" else str(self.plane.bin_dir / args[0])
        self._daemons.start(name, [binary, *args[1:]])

    def _stop_all(self) -> None:
        for name in ("kube-proxy", "kubelet"):
            if name in self._daemons:
                self._daemons.stop(name)
        if "containerd" in self._daemons:
            self._remove_pods()
            self._daemons.stop("containerd")
        _clean_up_machine(self.base, self.plane.bin_dir)

    def _remove_pods(self) -> None:
        """Kill every container and take down the sandboxes' networks while containerd runs."""
        for task in self.ctr("tasks", "list", "--quiet", check=False).stdout.split():
            self.ctr("tasks", "kill", "--signal=SIGKILL", task, check=False)


def _clean_up_machine(base: Path | None, bin_dir: Path | None) -> None:
    """What a node leaves on the machine outside its folder: shims, mounts (the pods' network
    namespaces among them), the bridge, kube-proxy's iptables chains. Also run before a start,
    after a crashed session."""
    shims = _run("pgrep", "-f", "containerd-shim-runc-v2 .*tablequeue-node-", check=False)
    for pid in shims.stdout.split():
        _run("kill", "-KILL", pid, check=False)
    _kill_pod_processes()
    mounts = Path("/proc/self/mounts").read_text().splitlines()
    for line in sorted(mounts, key=len, reverse=True):
        target = line.split()[1]
        if "/tablequeue-node-" in target:
            _run("umount", "-l", target, check=False)
    _run("ip", "link", "delete", BRIDGE, check=False)
    if bin_dir is not None and (bin_dir / "kube-proxy").exists():  # its chains and rules
        _run(str(bin_dir / "kube-proxy"), "--cleanup", check=False)
    if base is not None:
        shutil.rmtree(base, ignore_errors=True)


def _kill_pod_processes() -> None:
    """Containers outlive a killed shim: kill what the kubelet's cgroups (cgroupfs: `kubepods`
    in each v1 hierarchy) still hold, then remove those cgroups, deepest first."""
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        pods = hierarchy / "kubepods"
        if not pods.is_dir():
            continue
        groups = sorted((p for p in pods.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        for group in [*groups, pods]:
            procs = group / "cgroup.procs"
            for pid in procs.read_text().split() if procs.exists() else []:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        for group in [*groups, pods]:
            with contextlib.suppress(OSError):
                group.rmdir()


def pause_image_tag() -> str:
    key = hashlib.sha256(PAUSE_SOURCE.read_bytes()).hexdigest()[:16]
    return f"localhost/tablequeue-pause:{key}"


def build_pause_image() -> str:
    """The sandbox image: pause.c compiled statically, alone in an image (podman import)."""
    tag = pause_image_tag()
    if _run("podman", "image", "exists", tag, check=False).returncode == 0:
        return tag
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tablequeue-pause-", dir=CACHE) as folder:
        root = Path(folder) / "root"
        root.mkdir()
        _run("gcc", "-static", "-Os", "-o", str(root / "pause"), str(PAUSE_SOURCE))
        archive = Path(folder) / "pause.tar"
        _run(
            "tar",
            "--numeric-owner",
            "--owner=0",
            "--group=0",
            "-C",
            str(root),
            "-cf",
            str(archive),
            "pause",
        )
        _run("podman", "import", "--change", 'ENTRYPOINT ["/pause"]', str(archive), tag)
    return tag


@contextlib.contextmanager
def cluster(
    crds: Sequence[Path] = (), start_timeout: float = 180.0
) -> Iterator[tuple[ControlPlane, Node]]:
    """A control plane serving on the node's bridge, with a scheduler, and a node in it."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "node.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise NodeError("another test node runs on this machine (one at a time)") from None
        bin_dir = build_control_plane()
        _clean_up_machine(None, bin_dir)
        _make_bridge()
        try:
            with control_plane(bin_dir, crds=crds, address=GATEWAY, for_pods=True) as plane:
                base = Path(tempfile.mkdtemp(prefix="tablequeue-node-"))
                running = Node(base, plane)
                try:
                    running._start(start_timeout)
                    yield plane, running
                finally:
                    running._stop_all()
        finally:
            _clean_up_machine(None, bin_dir)


def _make_bridge() -> None:
    """The bridge and its address exist before the kubelet starts: they are the node's IP."""
    _run("ip", "link", "add", BRIDGE, "type", "bridge")
    _run("ip", "address", "add", f"{GATEWAY}/24", "dev", BRIDGE)
    _run("ip", "link", "set", BRIDGE, "up")
