"""The operator's state, handed to every handler as kopf's `memo` instead of module globals.

`main.run` creates it with the command line's settings; the startup handler adds the
Kubernetes client and the cleanup handler releases the client and the databases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tablequeue import Database, TableQueueError, engine_name, tenant_url
from tablequeue.errors import InvalidInput
from tablequeue.settings.operator import OperatorSettings, OverLimit
from tablequeue.spec import QueueResource

from .conditions import NotReady
from .databases import Databases, QueueKey
from .gauges import QueueGauges
from .kube import Kube
from .lanes import NamespaceLanes

__all__ = ["OperatorState", "OverLimit", "Settings"]


Settings = OperatorSettings
"""What the command line and the TABLEQUEUE_* variables set (`tablequeue.settings.operator`)."""


@dataclass(eq=False)
class OperatorState:
    settings: Settings
    databases: Databases = field(default_factory=Databases)
    gauges: QueueGauges = field(default_factory=QueueGauges)
    lanes: NamespaceLanes = field(default_factory=NamespaceLanes)
    """Each namespace's threads for its Queues' handlers."""
    kube_client: Kube | None = None
    """Set by the startup handler, before any Queue is handled."""
    cost_refusals: dict[QueueKey, str] = field(default_factory=dict)
    """The last refusal of the pods' deletion cost per Queue, logged once."""

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
        try:
            url = tenant_url(url)
        except InvalidInput as error:
            raise NotReady("DatabaseReachable", "URLRefused", str(error)) from None
        return self.databases.of_queue((namespace, resource.name), url)

    def close(self) -> None:
        self.lanes.close()
        self.databases.close()
        if self.kube_client is not None:
            self.kube_client.close()


def _is_sqlite(url: str) -> bool:
    try:
        return engine_name(url) == "sqlite"
    except TableQueueError:
        return False  # connecting reports it (InvalidDatabaseURL)
