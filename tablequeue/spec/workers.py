"""The Queue spec's `workers` section: the handler, polling and autoscaling of the worker
Deployment."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from .base import FREE_FORM, SpecModel

AutoscalingMode = Literal["Operator", "HPA", "KEDA", "None"]

PYTHON_HANDLER_PATTERN = (
    r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"
)
_PYTHON_HANDLER = re.compile(PYTHON_HANDLER_PATTERN)


def _python_handler(value: str) -> str:
    if not _PYTHON_HANDLER.fullmatch(value):
        raise ValueError(f"invalid python handler {value!r}: use 'package.module:function'")
    return value


PythonFunction = Annotated[
    str,
    AfterValidator(_python_handler),
    Field(json_schema_extra={"pattern": PYTHON_HANDLER_PATTERN}),
]


class HttpHandlerSpec(SpecModel):
    port: int = Field(8080, ge=1, le=65535, description="Port of the app container")
    path: str = Field("/process", pattern="^/", description="Path messages are POSTed to")
    timeout_seconds: float = Field(30.0, gt=0, description="Request timeout")


class HandlerSpec(SpecModel):
    """Exactly one of `http` or `python`."""

    http: HttpHandlerSpec | None = Field(None, description="POST each message to the app")
    python: PythonFunction | None = Field(
        None, description="Call pkg.module:function in the worker"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> HandlerSpec:
        if (self.http is None) == (self.python is None):
            raise ValueError("set exactly one of http or python")
        return self


class PollInterval(SpecModel):
    min_seconds: float = Field(
        0.1, gt=0, description="Delay after a non-empty batch (apply warns below 0.1)"
    )
    max_seconds: float = Field(
        5.0, gt=0, description="Longest delay when idle (apply warns above 10)"
    )

    @model_validator(mode="after")
    def _ordered(self) -> PollInterval:
        if self.min_seconds > self.max_seconds:
            raise ValueError(
                f"minSeconds ({self.min_seconds:g}) must not exceed maxSeconds "
                f"({self.max_seconds:g})"
            )
        return self

    def warnings(self) -> list[str]:
        """Intervals that work but are likely mistakes (NServiceBus's guidance: 100 ms to
        10 s): shorter ones poll the database for little gain, longer ones delay messages."""
        low, high = POLL_GUIDANCE_SECONDS
        found = []
        if self.min_seconds < low:
            found.append(
                f"workers.pollInterval.minSeconds {self.min_seconds:g} is below {low:g} s: "
                "workers would poll the database more often than useful"
            )
        if self.max_seconds > high:
            found.append(
                f"workers.pollInterval.maxSeconds {self.max_seconds:g} is above {high:g} s: "
                "a new message may wait that long for an idle worker (on PostgreSQL, "
                "notifications wake workers sooner)"
            )
        return found


POLL_GUIDANCE_SECONDS = (0.1, 10.0)
"""The poll intervals `apply` accepts without a warning."""


MAX_REPLICAS = 1000
"""The CRD's bound on a Queue's worker replicas; the operator's own maximum (`--max-replicas`,
`OPERATOR_MAX_REPLICAS` unless set) may be lower."""
OPERATOR_MAX_REPLICAS = 100


class Autoscaling(SpecModel):
    mode: AutoscalingMode = Field(
        "Operator",
        description="Who scales the workers: the operator, an HPA, KEDA (PostgreSQL), or no one",
    )
    min_replicas: int = Field(
        0,
        ge=0,
        le=MAX_REPLICAS,
        description="Fewest workers; 0 scales to zero (an HPA keeps at least 1)",
    )
    max_replicas: int = Field(10, ge=1, le=MAX_REPLICAS, description="Most workers")
    messages_per_replica: int = Field(100, ge=1, description="Backlog per worker")
    cooldown_seconds: float = Field(60.0, ge=0, description="Wait before scaling down")

    @model_validator(mode="after")
    def _ordered(self) -> Autoscaling:
        if self.min_replicas > self.max_replicas:
            raise ValueError(
                f"minReplicas ({self.min_replicas}) must not exceed maxReplicas "
                f"({self.max_replicas})"
            )
        return self


_OBJECTS: dict[str, type] = {"metadata": dict, "spec": dict}
_METADATA: dict[str, type] = {"labels": dict, "annotations": dict}
_POD: dict[str, type] = {"containers": list, "terminationGracePeriodSeconds": int}
_CONTAINER: dict[str, type] = {"name": str, "lifecycle": dict}
_KIND_NAMES: dict[type, str] = {
    dict: "an object",
    list: "a list",
    int: "a whole number",
    str: "a string",
    bool: "a boolean",
}


def _pod_template_shape(template: dict[str, Any] | None) -> dict[str, Any] | None:
    """The parts of the pod template the operator reads and extends are of their types (the
    CRD keeps the template as it is given; the API server checks the rest): a part of another
    type left the Queue Reconciling with no reason."""
    if template is None:
        return None
    _kinds(template, _OBJECTS, "")
    _kinds(template.get("metadata") or {}, _METADATA, "metadata.")
    pod = template.get("spec") or {}
    _kinds(pod, _POD, "spec.")
    for n, container in enumerate(pod.get("containers") or []):
        where = f"spec.containers[{n}]"
        if not isinstance(container, dict):
            raise ValueError(f"{where}: expected an object (a container), got {_kind(container)}")
        _kinds(container, _CONTAINER, f"{where}.")
    return template


def _kinds(part: dict[str, Any], kinds: dict[str, type], where: str) -> None:
    for key, kind in kinds.items():
        value = part.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise ValueError(f"{where}{key}: expected {_KIND_NAMES[kind]}, got {_kind(value)}")


def _kind(value: object) -> str:
    return _KIND_NAMES.get(type(value), type(value).__name__)


class WorkerSpec(SpecModel):
    handler: HandlerSpec = Field(
        default_factory=lambda: HandlerSpec(http=HttpHandlerSpec()),
        description="How a message is processed",
    )
    template: Annotated[dict[str, Any] | None, AfterValidator(_pod_template_shape)] = Field(
        None, json_schema_extra=FREE_FORM, description="PodTemplateSpec of the app"
    )
    image: str | None = Field(None, min_length=1, description="Worker image")
    batch_size: int = Field(10, ge=1, le=1000, description="Messages leased at a time")
    concurrency: int = Field(4, ge=1, le=1000, description="Handlers running at once")
    execution_timeout_seconds: float = Field(0.0, ge=0, description="Per message; 0 = no limit")
    grace_period_seconds: float = Field(30.0, ge=0, description="Time to finish on SIGTERM")
    app_readiness_path: str | None = Field(
        "/",
        pattern="^/",
        max_length=2000,
        # null is kept, not replaced by the default (a CRD field without `nullable` would be).
        json_schema_extra={"nullable": True},
        description="HTTP handler: the worker leases only while GET on this path of the app's "
        "port answers (any HTTP status but 502, 503 and 504): first when the pod starts, again "
        "after a request could not reach the app (the message is given back, no attempt counted); "
        "null: no check (a client-side kubectl apply drops nulls: use --server-side)",
    )
    poll_interval: PollInterval = Field(default_factory=PollInterval, description="Polling")
    autoscaling: Autoscaling = Field(default_factory=Autoscaling, description="Scaling")
