"""The operator's Kubernetes client: read the database Secret, read and write the worker
Deployment, its HorizontalPodAutoscaler or KEDA objects, scale the Deployment.

Bodies are the plain dicts of `builders`; reads return the client's objects, or None when the
object does not exist.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import kubernetes
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
        """A Secret's value; a missing Secret or key is `DatabaseReachable=False`."""
        try:
            secret = self.core.read_namespaced_secret(name, namespace)
        except ApiException as error:
            if error.status == 404:
                raise NotReady(
                    "DatabaseReachable", "SecretNotFound", f"secret {name!r} not found"
                ) from None
            raise
        data = (secret.data or {}).get(key)
        if data is None:
            raise NotReady(
                "DatabaseReachable", "SecretKeyNotFound", f"secret {name!r} has no key {key!r}"
            )
        return base64.b64decode(data).decode()

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
