"""The `Queue` custom resource as pydantic models, and loading it from YAML.

`queue` holds the resource and its spec; the other modules, the spec's self-standing parts
(archive, schedules, retention, subscriptions, workers, groups, dedupe, indexes; `base` is what
they share). Every public name is re-exported here: import from `tablequeue.spec`.
"""

import warnings
from typing import TYPE_CHECKING, Any

from .archive import ArchiveSpec
from .base import RateLimit
from .dedupe import Dedupe
from .groups import GroupsSpec
from .indexes import INDEX_PATH_PATTERN, IndexSpec, index_path_segments
from .queue import (
    API_VERSION,
    KIND,
    Backoff,
    DatabaseRef,
    DeletionPolicy,
    Dialect,
    HealthLevel,
    HealthRules,
    LeaseExpiredPolicy,
    ObjectMeta,
    QueueName,
    QueueResource,
    QueueSpec,
    RetryPolicy,
    SecretKeyRef,
    Status,
    TableName,
    load_queue_file,
    load_queues,
    validate_queue,
)
from .schedule import SCHEDULE_NAME_PATTERN, Schedule
from .subscriptions import RuntimeSubscriptions, Subscription
from .workers import (
    MAX_REPLICAS,
    OPERATOR_MAX_REPLICAS,
    POLL_GUIDANCE_SECONDS,
    Autoscaling,
    HandlerSpec,
    HttpHandlerSpec,
    PollInterval,
    WorkerSpec,
)

if not TYPE_CHECKING:  # for type checkers the old name is gone: mypy names the new one

    def __getattr__(name: str) -> Any:
        """`HttpHandler`, the spec's old name for `HttpHandlerSpec` (the worker has an HTTP
        handler of its own): deprecated, removed in the release after next."""
        if name == "HttpHandler":
            warnings.warn(
                "tablequeue.spec.HttpHandler is deprecated: use HttpHandlerSpec",
                DeprecationWarning,
                stacklevel=2,
            )
            return HttpHandlerSpec
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "API_VERSION",
    "INDEX_PATH_PATTERN",
    "KIND",
    "MAX_REPLICAS",
    "OPERATOR_MAX_REPLICAS",
    "POLL_GUIDANCE_SECONDS",
    "SCHEDULE_NAME_PATTERN",
    "ArchiveSpec",
    "Autoscaling",
    "Backoff",
    "DatabaseRef",
    "Dedupe",
    "DeletionPolicy",
    "Dialect",
    "GroupsSpec",
    "HandlerSpec",
    "HealthLevel",
    "HealthRules",
    "HttpHandlerSpec",
    "IndexSpec",
    "LeaseExpiredPolicy",
    "ObjectMeta",
    "PollInterval",
    "QueueName",
    "QueueResource",
    "QueueSpec",
    "RateLimit",
    "RetryPolicy",
    "RuntimeSubscriptions",
    "Schedule",
    "SecretKeyRef",
    "Status",
    "Subscription",
    "TableName",
    "WorkerSpec",
    "index_path_segments",
    "load_queue_file",
    "load_queues",
    "validate_queue",
]
