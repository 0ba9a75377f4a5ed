"""A throwaway Kubernetes control plane: etcd, kube-apiserver and kube-controller-manager.

What controller-runtime's envtest starts, with the same flags, from binaries that
`scripts/build-control-plane` builds once per machine into the user's cache folder. Independent of
pytest:

    with control_plane(crds=[Path("crds/queue.yaml")]) as plane:
        plane.kubectl("create", "namespace", "demo")
        subprocess.run([...], env=plane.env)  # anything that reads KUBECONFIG

Everything is on loopback, on free ports, with state in one temporary folder: certificates made
with the `openssl` command (a CA, the apiserver's serving certificate, a client certificate in
the group system:masters, the aggregation layer's front-proxy client certificate, the
service-account signing key), etcd's data (no fsync), the component logs and the kubeconfig.
There is no scheduler and no kubelet: Pods stay Pending.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..ports import free_port
from ..processes import Daemons

REPO = Path(__file__).resolve().parents[3]
BUILD_SCRIPT = REPO / "scripts" / "build-control-plane"
GO_MOD = REPO / "tools" / "controlplane" / "go.mod"

SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"


class ControlPlaneError(RuntimeError):
    """The control plane could not be built or started; the message has the logs' tails."""


class KubectlError(subprocess.CalledProcessError):
    """kubectl failed; unlike CalledProcessError, its message includes what kubectl said."""

    def __str__(self) -> str:
        command = " ".join(str(part) for part in self.cmd[3:])  # without binary, config, cache
        return f"kubectl {command} exited {self.returncode}: {(self.stderr or '').strip()}"


def pinned_versions() -> tuple[str, str]:
    """The Kubernetes and etcd versions pinned in tools/controlplane/go.mod."""
    found: dict[str, str] = {}
    for line in GO_MOD.read_text().splitlines():
        words = line.split()
        if words[:1] == ["require"]:
            words = words[1:]
        if len(words) >= 2:
            found.setdefault(words[0], words[1])
    return found["k8s.io/kubernetes"], found["go.etcd.io/etcd/server/v3"]


def build_control_plane(*, controller_manager: bool = True) -> Path:
    """Run scripts/build-control-plane and return its bin folder.

    The first run on a machine builds the binaries (minutes; progress on stderr); later runs
    return at once.
    """
    command = [str(BUILD_SCRIPT)]
    if not controller_manager:
        command.append("--no-controller-manager")
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise ControlPlaneError(f"{BUILD_SCRIPT} failed with exit code {result.returncode}")
    return Path(lines[-1])


def _openssl(directory: Path, command: str) -> None:
    """Run `openssl COMMAND` in `directory`; COMMAND's words are split on spaces."""
    args = ["openssl", *command.split()]
    result = subprocess.run(args, cwd=directory, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ControlPlaneError(f"openssl {command} failed: {result.stderr.strip()}")


def _make_certificates(pki: Path, address: str) -> None:
    """A CA, a serving certificate for `address`, an admin client certificate, an SA key pair.

    Plain `openssl req` + `openssl x509 -req` with our own config files, so the system's
    openssl.cnf defaults do not matter (works with OpenSSL 1.1.1 and 3.x). P-256 keys: fast.
    """
    pki.mkdir(mode=0o700)

    def key(name: str) -> None:
        _openssl(pki, f"genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out {name}.key")

    def config(name: str, subject: str, extensions: str) -> str:
        fields = "".join(f"{field.strip()}\n" for field in subject.split(","))
        (pki / f"{name}.cnf").write_text(
            f"[req]\nprompt = no\ndistinguished_name = dn\n[dn]\n{fields}[ext]\n{extensions}"
        )
        return f"{name}.cnf"

    key("ca")
    ca_extensions = (
        "basicConstraints = critical, CA:TRUE\nkeyUsage = critical, keyCertSign, cRLSign\n"
        "subjectKeyIdentifier = hash\n"
    )
    ca_config = config("ca", "CN = tablequeue-test-ca", ca_extensions)
    _openssl(
        pki, f"req -x509 -new -config {ca_config} -extensions ext -key ca.key -days 7 -out ca.crt"
    )

    def leaf(name: str, subject: str, extensions: str) -> None:
        key(name)
        leaf_config = config(
            name,
            subject,
            "basicConstraints = critical, CA:FALSE\n"
            "keyUsage = critical, digitalSignature\n"
            "authorityKeyIdentifier = keyid\n" + extensions,
        )
        _openssl(pki, f"req -new -config {leaf_config} -key {name}.key -out {name}.csr")
        _openssl(
            pki,
            f"x509 -req -in {name}.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 7"
            f" -extfile {leaf_config} -extensions ext -out {name}.crt",
        )

    leaf(
        "apiserver",
        "CN = kube-apiserver",
        "extendedKeyUsage = serverAuth\n"
        f"subjectAltName = IP:{address}, DNS:localhost, IP:10.0.0.1, DNS:kubernetes,"
        " DNS:kubernetes.default, DNS:kubernetes.default.svc\n",
    )
    leaf("admin", "CN = tablequeue-admin, O = system:masters", "extendedKeyUsage = clientAuth\n")
    # The aggregation layer's client: the apiserver proxies to an APIService's server with it.
    leaf("front-proxy-client", "CN = front-proxy-client", "extendedKeyUsage = clientAuth\n")
    # For servers on this machine that are also each other's clients (KEDA's operator and its
    # metrics API server speak mutual TLS over gRPC): both usages, valid for localhost.
    leaf(
        "local-service",
        "CN = localhost",
        "extendedKeyUsage = serverAuth, clientAuth\nsubjectAltName = IP:127.0.0.1, DNS:localhost\n",
    )
    key("service-account")
    _openssl(pki, "pkey -in service-account.key -pubout -out service-account.pub")


class ControlPlane:
    """A running control plane (made by `control_plane()`): where it is and how to talk to it."""

    def __init__(
        self,
        base: Path,
        bin_dir: Path,
        with_controller_manager: bool,
        address: str = "127.0.0.1",
        for_pods: bool = False,
    ) -> None:
        self.base = base
        self.bin_dir = bin_dir
        self.with_controller_manager = with_controller_manager
        self.address = address
        self.for_pods = for_pods
        self.pki = base / "pki"
        self.logs = base / "logs"
        self.kubeconfig = base / "kubeconfig"
        self.etcd_url = f"http://127.0.0.1:{free_port()}"
        self._etcd_peer_url = f"http://127.0.0.1:{free_port()}"
        self.port = free_port()
        self.server = f"https://{address}:{self.port}"
        self.started_in: float | None = None  # seconds from start to ready
        self._daemons = Daemons(self.logs, self.base, ControlPlaneError)
        self._tls: ssl.SSLContext | None = None

    @property
    def env(self) -> dict[str, str]:
        """os.environ with KUBECONFIG pointing here, for processes under test."""
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 60.0,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this control plane; raises KubectlError (with stderr) if check."""
        command = [
            str(self.bin_dir / "kubectl"),
            f"--kubeconfig={self.kubeconfig}",
            f"--cache-dir={self.base / 'kubectl-cache'}",
            *args,
        ]
        result = subprocess.run(
            command, input=input, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and result.returncode != 0:
            raise KubectlError(result.returncode, command, result.stdout, result.stderr)
        return result

    def kubectl_json(self, *args: str) -> Any:
        """`kubectl ARGS -o json`, parsed."""
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def get(self, path: str) -> tuple[int, bytes]:
        """GET a path on the apiserver as the admin; (HTTP status, body), 0 if unreachable."""
        if self._tls is None:
            self._tls = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
            self._tls.load_cert_chain(self.pki / "admin.crt", self.pki / "admin.key")
        return _http_get(self.server + path, self._tls)

    def log(self, name: str) -> str:
        """What a component (etcd, kube-apiserver, kube-controller-manager) has logged so far."""
        return self._daemons.log(name)

    # Start and stop.

    def _start(self, timeout: float, crds: Sequence[Path] = ()) -> None:
        began = time.monotonic()
        deadline = began + timeout
        self.logs.mkdir()
        _make_certificates(self.pki, self.address)
        self._write_kubeconfig()
        self._spawn("etcd", self._etcd_args())
        self._daemons.wait_ready("etcd", deadline, lambda: _etcd_healthy(self.etcd_url))
        self._spawn("kube-apiserver", self._apiserver_args())
        self._daemons.wait_ready("kube-apiserver", deadline, lambda: self.get("/readyz")[0] == 200)
        for crd in crds:
            self._install_crd(crd, deadline)
        if self.for_pods:
            self._spawn("kube-scheduler", self._scheduler_args())
        if self.with_controller_manager:
            self._spawn("kube-controller-manager", self._controller_manager_args())
            # The serviceaccount controller making default/default shows the controllers run.
            self._daemons.wait_ready(
                "kube-controller-manager",
                deadline,
                lambda: self.get("/api/v1/namespaces/default/serviceaccounts/default")[0] == 200,
            )
        self.started_in = time.monotonic() - began

    def _install_crd(self, path: Path, deadline: float) -> None:
        """Apply a CustomResourceDefinition and wait until discovery serves its kind.

        Before the controller manager starts, so that its garbage collector knows the kind from
        the beginning, as in a cluster whose CRDs were installed long ago. A kind it does not
        know yet it learns only at its next discovery resync (every 30 s); until then it cannot
        look up an owner of that kind and backs off exponentially, so objects a custom resource
        owns could outlive it by up to a minute or so after it is deleted.
        """
        applied = json.loads(self.kubectl("apply", "-f", str(path), "-o", "json").stdout)
        for crd in applied.get("items", [applied]):
            name, spec = crd["metadata"]["name"], crd["spec"]
            # Polled rather than `kubectl wait --for=condition=Established`: that fails at once,
            # not waiting, while the new CRD has no status conditions yet ("accessor error").
            self._daemons.wait_ready(
                "kube-apiserver", deadline, functools.partial(self._established, name)
            )
            served = f"{spec['names']['plural']}.{spec['group']}"
            self._daemons.wait_ready(
                "kube-apiserver", deadline, functools.partial(self._serves, served)
            )

    def _established(self, crd: str) -> bool:
        """Whether the CustomResourceDefinition's Established condition is True."""
        path = '{.status.conditions[?(@.type=="Established")].status}'
        found = self.kubectl("get", f"crd/{crd}", "-o", f"jsonpath={path}", check=False)
        return found.returncode == 0 and found.stdout.strip() == "True"

    def _serves(self, resource: str) -> bool:
        """Whether `kubectl get RESOURCE` works: discovery has the kind (kubectl re-reads it)."""
        return self.kubectl("get", resource, "-A", check=False).returncode == 0

    def _etcd_args(self) -> list[str]:
        return [
            "--name=tablequeue",
            f"--data-dir={self.base / 'etcd'}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={self._etcd_peer_url}",
            f"--initial-advertise-peer-urls={self._etcd_peer_url}",
            f"--initial-cluster=tablequeue={self._etcd_peer_url}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ]

    def _apiserver_args(self) -> list[str]:
        pki = self.pki
        return [
            # envtest's defaults
            f"--advertise-address={self.address}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--allow-privileged=true",
            # Without the serviceaccount controller every Pod would need its SA made by hand;
            # pods that run on a node get their token (and so in-cluster credentials) from it.
            *([] if self.for_pods else ["--disable-admission-plugins=ServiceAccount"]),
            f"--etcd-servers={self.etcd_url}",
            f"--cert-dir={pki}",
            f"--bind-address={self.address}",
            f"--secure-port={self.port}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            # envtest's authentication and authorization
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--service-account-key-file={pki / 'service-account.pub'}",
            f"--service-account-signing-key-file={pki / 'service-account.key'}",
            f"--service-account-issuer={self.server}/",
            "--authorization-mode=RBAC",
            # The aggregation layer (an APIService such as external.metrics.k8s.io): requests
            # are proxied with the front-proxy client certificate, naming the user in headers
            # that the extension server trusts from that certificate only.
            f"--requestheader-client-ca-file={pki / 'ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
            # To the kubelet (logs, exec) as the admin; it checks with the API server (webhook).
            *(
                [
                    f"--kubelet-client-certificate={pki / 'admin.crt'}",
                    f"--kubelet-client-key={pki / 'admin.key'}",
                    "--kubelet-preferred-address-types=InternalIP",  # no DNS lookup of its name
                ]
                if self.for_pods
                else []
            ),
        ]

    def _scheduler_args(self) -> list[str]:
        return [
            f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            "--secure-port=0",  # readiness is seen through the API: pods get bound
        ]

    def _controller_manager_args(self) -> list[str]:
        pki = self.pki
        return [
            f"--kubeconfig={self.kubeconfig}",
            # All default controllers; the cloud ones and node IPAM stay off by themselves.
            "--controllers=*",
            "--use-service-account-credentials=false",
            "--leader-elect=false",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            f"--root-ca-file={pki / 'ca.crt'}",
            f"--service-account-private-key-file={pki / 'service-account.key'}",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}",
            f"--cluster-signing-key-file={pki / 'ca.key'}",
            "--bind-address=127.0.0.1",
            "--secure-port=0",  # no health endpoint needed: readiness is seen through the API
            # HPAs act within a second or two in tests (default: every 15 s).
            "--horizontal-pod-autoscaler-sync-period=1s",
        ]

    def _write_kubeconfig(self) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "tablequeue-test",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority": str(self.pki / "ca.crt"),
                    },
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate": str(self.pki / "admin.crt"),
                        "client-key": str(self.pki / "admin.key"),
                    },
                }
            ],
            "contexts": [
                {
                    "name": "tablequeue-test",
                    "context": {"cluster": "tablequeue-test", "user": "admin"},
                }
            ],
            "current-context": "tablequeue-test",
        }
        self.kubeconfig.write_text(json.dumps(config, indent=2))  # JSON is YAML
        self.kubeconfig.chmod(0o600)

    def _spawn(self, name: str, args: list[str]) -> None:
        self._daemons.start(name, [str(self.bin_dir / name), *args])

    def _stop(self) -> None:
        self._daemons.stop_all()


def _http_get(url: str, context: ssl.SSLContext | None) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as error:
        return int(error.code), bytes(error.read())
    except (urllib.error.URLError, OSError):
        return 0, b""


def _etcd_healthy(url: str) -> bool:
    status, body = _http_get(url + "/health", None)
    return status == 200 and b'"health":"true"' in body


@contextlib.contextmanager
def control_plane(
    bin_dir: Path | None = None,
    *,
    controller_manager: bool | None = None,
    crds: Sequence[Path] = (),
    start_timeout: float = 120.0,
    address: str = "127.0.0.1",
    for_pods: bool = False,
) -> Iterator[ControlPlane]:
    """Start etcd, kube-apiserver and (if built) kube-controller-manager; stop them on exit.

    `crds`: files of CustomResourceDefinitions, installed (established and served) before the
    controller manager starts, so that its garbage collector follows owner references to their
    kinds at once (see `ControlPlane._install_crd`).

    `bin_dir` defaults to `build_control_plane()`'s. `controller_manager=None` runs it when its
    binary is there. Raises ControlPlaneError, with the components' logs, if the control plane is
    not ready within `start_timeout` seconds.
    """
    if bin_dir is None:
        bin_dir = build_control_plane(controller_manager=controller_manager is not False)
    if controller_manager is None:
        controller_manager = os.access(bin_dir / "kube-controller-manager", os.X_OK)
    base = Path(tempfile.mkdtemp(prefix="tablequeue-kube-"))
    plane = ControlPlane(base, bin_dir, controller_manager, address, for_pods)
    try:
        plane._start(start_timeout, crds)
        yield plane
    finally:
        plane._stop()
        shutil.rmtree(base, ignore_errors=True)
