"""The operator's Kubernetes client: read the database Secret, read and write the worker
Deployment, its HorizontalPodAutoscaler or KEDA objects, scale the Deployment, list its pods and
annotate them.

Bodies are the plain dicts of `builders`; reads return the client's objects, or None when the
object does not exist.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import kubernetes
import pydantic
from kubernetes.client.exceptions import ApiException

from . import keda
from .conditions import NotReady


def _read(reader: Callable[[str, str], Any], name: str, namespace: str) -> Any:
    try:
        return reader(name, namespace)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def refusal(error: ApiException) -> str:
    """What the API server said when it refused a request: its Status message (which names the
    object and the field), else the HTTP status."""
    try:
        message = json.loads(error.body or "").get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message) if message else f"HTTP {error.status} {error.reason}"


def invalid(error: pydantic.ValidationError) -> str:
    """What the Kubernetes client (which checks a body before it sends it) says of an object,
    e.g. of a pod template field of the wrong type."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"] if not isinstance(part, int))
    return f"{where}: {first['msg']}"


def _plain(body: dict[str, Any]) -> Any:
    """The client takes plain dicts as bodies as well as its model classes."""
    return body


class Kube:
    """One Kubernetes client, and its connection pool, for every handler: a client per call
    costs a TLS handshake (about 20 ms of CPU), and the timer makes several calls per Queue."""

    def __init__(self, client: kubernetes.client.ApiClient) -> None:
        self.client = client
        self.core = kubernetes.client.CoreV1Api(client)
        self.apps = kubernetes.client.AppsV1Api(client)
        self.autoscaling = kubernetes.client.AutoscalingV2Api(client)
        self.custom = kubernetes.client.CustomObjectsApi(client)

    @classmethod
    def from_environment(cls, connections: int) -> Kube:
        """The in-cluster ServiceAccount, else the kubeconfig; `connections` is the pool size
        (one per handler thread)."""
        try:
            kubernetes.config.load_incluster_config()  # type: ignore[no-untyped-call]
        except kubernetes.config.ConfigException:
            kubernetes.config.load_kube_config()  # type: ignore[no-untyped-call]
        configuration = kubernetes.client.Configuration.get_default_copy()
        configuration.connection_pool_maxsize = connections
        return cls(kubernetes.client.ApiClient(configuration))

    def close(self) -> None:
        self.client.close()  # type: ignore[no-untyped-call]

    def secret_value(self, name: str, key: str, namespace: str) -> str:
        """A Secret's value; a missing Secret or key, a read the API server refuses (4xx) or
        cannot answer now (429, 5xx: retried like every NotReady) is `DatabaseReachable=False`
        with the reason."""
        try:
            secret = self.core.read_namespaced_secret(name, namespace)
        except ApiException as error:
            if error.status == 404:
                raise NotReady(
                    "DatabaseReachable", "SecretNotFound", f"secret {name!r} not found"
                ) from None
            if error.status == 429 or error.status >= 500:
                raise NotReady(
                    "DatabaseReachable",
                    "SecretUnavailable",
                    f"the API server could not read secret {name!r} now, retrying: "
                    f"{refusal(error)}",
                ) from None
            raise NotReady(  # e.g. an invalid name
                "DatabaseReachable",
                "SecretRefused",
                f"the API server refused to read secret {name!r}: {refusal(error)}",
            ) from None
        data = (secret.data or {}).get(key)
        if data is None:
            raise NotReady(
                "DatabaseReachable", "SecretKeyNotFound", f"secret {name!r} has no key {key!r}"
            )
        try:
            return base64.b64decode(data).decode()
        except UnicodeDecodeError:
            raise NotReady(
                "DatabaseReachable",
                "InvalidDatabaseURL",
                f"secret {name!r} key {key!r} is not UTF-8 text",
            ) from None

    def deployment(self, name: str, namespace: str) -> Any:
        return _read(self.apps.read_namespaced_deployment, name, namespace)

    def horizontal_pod_autoscaler(self, name: str, namespace: str) -> Any:
        return _read(self.autoscaling.read_namespaced_horizontal_pod_autoscaler, name, namespace)

    def put_deployment(self, wanted: dict[str, Any], existing: Any) -> None:
        """Create it, or replace `existing` (a conflict if it changed since it was read)."""
        namespace = wanted["metadata"]["namespace"]
        if existing is None:
            self.apps.create_namespaced_deployment(namespace, _plain(wanted))
            return
        wanted["metadata"]["resourceVersion"] = existing.metadata.resource_version
        self.apps.replace_namespaced_deployment(
            wanted["metadata"]["name"], namespace, _plain(wanted)
        )

    def put_horizontal_pod_autoscaler(self, wanted: dict[str, Any], existing: Any) -> None:
        """Create it, or replace `existing` (a conflict if it changed since it was read)."""
        namespace = wanted["metadata"]["namespace"]
        if existing is None:
            self.autoscaling.create_namespaced_horizontal_pod_autoscaler(namespace, _plain(wanted))
            return
        wanted["metadata"]["resourceVersion"] = existing.metadata.resource_version
        self.autoscaling.replace_namespaced_horizontal_pod_autoscaler(
            wanted["metadata"]["name"], namespace, _plain(wanted)
        )

    def delete_horizontal_pod_autoscaler(self, name: str, namespace: str) -> None:
        self.autoscaling.delete_namespaced_horizontal_pod_autoscaler(name, namespace)

    def scale_deployment(self, name: str, namespace: str, replicas: int) -> None:
        self.apps.patch_namespaced_deployment_scale(
            name, namespace, {"spec": {"replicas": replicas}}
        )

    def pods(self, namespace: str, labels: dict[str, str]) -> list[Any]:
        """The pods that carry all these labels."""
        selector = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
        return list(self.core.list_namespaced_pod(namespace, label_selector=selector).items)

    def annotate_pod_if_present(
        self, name: str, namespace: str, annotations: dict[str, str]
    ) -> bool:
        """Set these annotations of one pod (a patch: the others stay); False if it is gone."""
        patch = {"metadata": {"annotations": annotations}}
        try:
            self.core.patch_namespaced_pod(name, namespace, patch)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    # KEDA's objects (keda.sh/v1alpha1), as plain dicts.

    def keda_object(self, plural: str, name: str, namespace: str) -> dict[str, Any] | None:
        """A ScaledObject or TriggerAuthentication; None also when KEDA's CRDs are not installed
        (then there is nothing to delete either)."""
        found: dict[str, Any] | None = _read(
            lambda n, ns: self.custom.get_namespaced_custom_object(
                keda.GROUP, keda.VERSION, ns, plural, n
            ),
            name,
            namespace,
        )
        return found

    def put_keda_object(
        self, plural: str, wanted: dict[str, Any], existing: dict[str, Any] | None
    ) -> None:
        """Create it, or replace `existing` (a conflict if it changed since it was read)."""
        namespace, name = wanted["metadata"]["namespace"], wanted["metadata"]["name"]
        if existing is None:
            self.custom.create_namespaced_custom_object(
                keda.GROUP, keda.VERSION, namespace, plural, wanted
            )
            return
        wanted["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
        self.custom.replace_namespaced_custom_object(
            keda.GROUP, keda.VERSION, namespace, plural, name, wanted
        )

    def delete_keda_object(self, plural: str, name: str, namespace: str) -> None:
        self.custom.delete_namespaced_custom_object(
            keda.GROUP, keda.VERSION, namespace, plural, name
        )
