"""The operator's state, handed to every handler as kopf's `memo` instead of module globals.

`main.run` creates it with the command line's settings; the startup handler adds the
Kubernetes client and the cleanup handler releases the client and the databases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.metadata import version

from tablequeue import Database, TableQueueError, engine_name
from tablequeue.spec import OPERATOR_MAX_REPLICAS, QueueResource, QueueSpec

from .conditions import NotReady
from .databases import Databases
from .gauges import QueueGauges
from .kube import Kube


@dataclass(frozen=True)
class Settings:
    """What the command line sets."""

    worker_image: str = f"tablequeue/worker:{version('tablequeue')}"
    """The worker image of this release, as Dockerfile.worker and the Helm chart name it."""
    interval: float = 10.0
    """Seconds between status updates and scaling decisions of each Queue."""
    max_replicas: int = OPERATOR_MAX_REPLICAS
    """The most worker replicas a Queue may ask for (`maxReplicas`)."""
    allow_sqlite: bool = False
    """Serve `sqlite://` URLs: files in the operator's own file system, which a tenant's
    Secret would otherwise choose."""

    def check(self, spec: QueueSpec) -> None:
        """A valid spec this operator refuses by its settings: OverLimit names the field."""
        wanted = spec.workers.autoscaling.max_replicas
        if wanted > self.max_replicas:
            raise OverLimit(
                f"spec.workers.autoscaling.maxReplicas: {wanted} is more than this operator's "
                f"maximum of {self.max_replicas} (--max-replicas, "
                "TABLEQUEUE_OPERATOR_MAX_REPLICAS)"
            )


class OverLimit(ValueError):
    """A Queue asks for more than the operator's settings allow."""


@dataclass(eq=False)
class OperatorState:
    settings: Settings
    databases: Databases = field(default_factory=Databases)
    gauges: QueueGauges = field(default_factory=QueueGauges)
    kube_client: Kube | None = None
    """Set by the startup handler, before any Queue is handled."""

    def __copy__(self) -> OperatorState:
        """kopf copies the operator's memo into each resource's memo: all Queues share one."""
        return self

    @property
    def kube(self) -> Kube:
        if self.kube_client is None:
            raise RuntimeError("no Kubernetes client: the operator's startup handler sets it")
        return self.kube_client

    def database(self, namespace: str, resource: QueueResource) -> Database:
        """The Database whose URL the Queue's Secret holds."""
        ref = resource.spec.database
        if ref is None:
            raise NotReady("DatabaseReachable", "NoDatabase", "spec.database.secretRef is required")
        url = self.kube.secret_value(ref.secret_ref.name, ref.secret_ref.key, namespace)
        if not self.settings.allow_sqlite and _is_sqlite(url):
            raise NotReady(
                "DatabaseReachable",
                "SQLiteNotAllowed",
                f"secret {ref.secret_ref.name!r} names a SQLite database: a file in the "
                "operator's own file system, refused unless the operator runs with "
                "--allow-sqlite (TABLEQUEUE_OPERATOR_ALLOW_SQLITE=true)",
            )
        return self.databases.of_queue((namespace, resource.name), url)

    def close(self) -> None:
        self.databases.close()
        if self.kube_client is not None:
            self.kube_client.close()


def _is_sqlite(url: str) -> bool:
    try:
        return engine_name(url) == "sqlite"
    except TableQueueError:
        return False  # connecting reports it (InvalidDatabaseURL)
