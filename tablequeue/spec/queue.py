"""The Queue resource and its spec (`QueueResource`, `QueueSpec`), and loading them from YAML.

Field names are camelCase in YAML (aliases) and snake_case in Python (both accepted on input).
Unknown fields are errors, types are strict (as in the CRD), so a typo never passes silently. The
operator generates the CRD's openAPIV3Schema from these models: keep constraints in `Field(...)`.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    FieldSerializationInfo,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from .. import names
from ..durations import Duration, format_duration
from ..errors import SpecError
from ..limits import MAX_SECONDS
from .archive import ArchiveSpec
from .base import FREE_FORM, RateLimit, SpecModel
from .dedupe import Dedupe
from .groups import GroupsSpec
from .indexes import IndexSpec, index_path_segments
from .retention import DEFAULT_KEEP_FINAL, DEFAULT_KEEP_RESULTS, KEEP_FIELDS, is_keep
from .schedule import Schedule
from .subscriptions import RuntimeSubscriptions, Subscription
from .workers import WorkerSpec

API_VERSION: Final = "tablequeue.dev/v1"
KIND: Final = "Queue"

Dialect = Literal["postgresql", "sqlite", "mssql", "mysql", "mariadb"]
"""`mysql` and `mariadb` both name the MariaDB engine; checked against the URL at apply."""
LeaseExpiredPolicy = Literal["Abandon", "Retry"]
Backoff = Literal["fixed", "exponential"]
HealthLevel = Literal["Healthy", "Degraded", "Unhealthy"]
DeletionPolicy = Literal["Retain", "Delete"]

QueueName = Annotated[
    str,
    AfterValidator(names.queue_name),
    Field(json_schema_extra={"pattern": names.QUEUE_NAME.pattern}),
]
TableName = Annotated[
    str,
    AfterValidator(names.table_name),
    Field(json_schema_extra={"pattern": names.TABLE_NAME.pattern}),
]
Status = Annotated[
    str,
    AfterValidator(names.settable_status),
    Field(json_schema_extra={"pattern": names.STATUS.pattern}),
]


class SecretKeyRef(SpecModel):
    name: str = Field(min_length=1, description="Secret in the Queue's namespace")
    key: str = Field("url", min_length=1, description="Key holding the SQLAlchemy URL")


class DatabaseRef(SpecModel):
    secret_ref: SecretKeyRef = Field(description="Secret with the database URL")
    dialect: Dialect | None = Field(
        None, description="Database kind, checked against the URL; default: from the URL"
    )


class RetryPolicy(SpecModel):
    delay_seconds: float = Field(10.0, ge=0, description="Delay before the first retry")
    backoff: Backoff = Field("exponential", description="fixed, or doubling per attempt")
    max_delay_seconds: float = Field(3600.0, ge=0, description="Upper bound of the delay")
    jitter: float = Field(0.1, ge=0, le=1, description="Fraction of the delay randomized")


class HealthRules(SpecModel):
    enabled: bool = Field(
        True, description="Report health for this queue; false: Disabled (200, no reasons)"
    )
    when_errors: HealthLevel = Field(
        "Unhealthy", description="Health while Error rows exist (Healthy: they do not count)"
    )
    when_abandoned: HealthLevel = Field(
        "Unhealthy", description="Health while Abandoned rows exist"
    )
    max_oldest_pending_seconds: float = Field(
        0.0, ge=0, description="Unhealthy when the oldest Pending is older; 0 = off"
    )
    when_no_workers: HealthLevel = Field(
        "Unhealthy",
        description="Health when workers are expected, none heartbeats and due messages waited "
        "longer than noWorkersAfterSeconds",
    )
    no_workers_after_seconds: float = Field(
        120.0, ge=0, description="How long due messages may wait for a first worker (scale-up)"
    )


class QueueSpec(SpecModel):
    database: DatabaseRef | None = Field(None, description="Where the table lives")
    table: TableName | None = Field(None, description="Table name; default: from the name")
    category: str = Field(
        "Default", min_length=1, max_length=100, description="Group in the admin UI"
    )
    default_status: Status = Field("Pending", description="Status given on enqueue")
    lease_seconds: int = Field(1800, ge=1, le=7 * 86400, description="Lease length")
    on_lease_expired: LeaseExpiredPolicy = Field("Abandon", description="After a lease expires")
    max_attempts: int = Field(1, ge=1, le=1000, description="Attempts before Error")
    retry: RetryPolicy = Field(default_factory=RetryPolicy, description="Retry back-off")
    idempotent: bool = Field(False, description="Discard unchanged bodies, keep processed")
    dedupe: Dedupe = Field(
        default_factory=Dedupe, description="What enqueueing a messageId that exists does"
    )
    keep_processed_for: Duration = Field(
        None,
        description="Keep Processed rows; default 0s, or forever when idempotent; "
        "at least dedupe.window in dedupe mode window",
    )
    keep_results_for: Duration = Field(
        None,
        description="Keep the outcome of finished messages (GET /jobs) after the row; default 1h",
    )
    keep_error_for: Duration = Field(None, description="Keep Error rows; default 30d")
    keep_abandoned_for: Duration = Field(None, description="Keep Abandoned rows; default 30d")
    keep_cancelled_for: Duration = Field(None, description="Keep Cancelled rows; default 7d")
    keep_expired_for: Duration = Field(None, description="Keep Expired rows; default 7d")
    expire_after: Duration = Field(
        None,
        description="Default expiry of a new message without one, from when it is due; "
        "default never",
    )
    health: HealthRules = Field(default_factory=HealthRules, description="Health rules")
    deletion_policy: DeletionPolicy = Field("Retain", description="Delete drops the table")
    example_message: Any = Field(
        None, json_schema_extra=FREE_FORM, description="Prefilled in the admin UI"
    )
    workers: WorkerSpec = Field(default_factory=WorkerSpec, description="Worker Deployment")
    indexes: list[IndexSpec] = Field(
        default_factory=list,
        max_length=16,
        description="Indexes on body paths, for predicates on big queues",
    )
    schedules: list[Schedule] = Field(
        default_factory=list,
        max_length=100,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
        description="Recurring messages, each enqueued once per tick",
    )
    paused: bool = Field(
        False, description="Workers lease nothing while paused; enqueue still works"
    )
    rate_limit: RateLimit | None = Field(
        None, description="Most messages leased per second, all workers together"
    )
    global_concurrency: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="Most messages Leased at once, all workers and replicas together",
    )
    groups: GroupsSpec | None = Field(
        None,
        description="Ordered groups: messages that share a group key run in id order, at most "
        "groups.concurrency at once",
    )
    subscriptions: list[Subscription] = Field(
        default_factory=list,
        max_length=100,
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["topic"],
        },
        description="Topics this queue subscribes to (publish/subscribe), each at most once",
    )
    runtime_subscriptions: RuntimeSubscriptions | None = Field(
        None, description="Subscriptions made at runtime, beside these; default: none allowed"
    )
    archive: ArchiveSpec | None = Field(
        None, description="Archive finished messages to Parquet on a schedule (a CronJob)"
    )

    @model_validator(mode="after")
    def _unique_schedules(self) -> QueueSpec:
        seen: dict[str, int] = {}
        for index, schedule in enumerate(self.schedules):
            if schedule.name in seen:
                raise ValueError(
                    f"duplicate schedule name {schedule.name!r} (schedules {seen[schedule.name]} "
                    f"and {index})"
                )
            seen[schedule.name] = index
        return self

    @model_validator(mode="after")
    def _scalable(self) -> QueueSpec:
        dialect = self.database.dialect if self.database else None
        if self.workers.autoscaling.mode == "KEDA" and dialect not in (None, "postgresql"):
            raise ValueError(
                f"workers.autoscaling.mode KEDA reads the backlog with KEDA's postgresql scaler: "
                f"database.dialect {dialect} cannot be scaled by it (use Operator or HPA)"
            )
        return self

    @model_validator(mode="after")
    def _distinct_indexes(self) -> QueueSpec:
        seen: dict[tuple[Any, str], str] = {}
        for index in self.indexes:
            key = (index_path_segments(index.path), index.type)
            if key in seen:
                raise ValueError(
                    f"indexes: {index.path!r} ({index.type}) is declared twice"
                    f" (also as {seen[key]!r})"
                )
            seen[key] = index.path
        return self

    @field_validator("expire_after")
    @classmethod
    def _expiry_in_range(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and not 0 < value.total_seconds() <= MAX_SECONDS:
            raise ValueError(
                f"expireAfter must be longer than 0s and at most {MAX_SECONDS} seconds (or forever)"
            )
        return value

    @model_validator(mode="before")
    @classmethod
    def _null_is_unset(cls, data: Any) -> Any:
        # `keepProcessedFor: null` (or another keep*For, or expireAfter) means unset (as the API
        # server prunes it), never forever.
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if v is not None or not _null_means_unset(k)}
        return data

    @field_serializer(*KEEP_FIELDS)
    def _dump_keep(self, value: timedelta | None, info: FieldSerializationInfo) -> str | None:
        return format_duration(value) if info.field_name in self.model_fields_set else None

    @field_serializer("expire_after")
    def _dump_expiry(self, value: timedelta | None) -> str | None:
        return None if value is None else format_duration(value)

    @property
    def allows_runtime_subscriptions(self) -> bool:
        return self.runtime_subscriptions is not None and self.runtime_subscriptions.allowed

    def table_for(self, queue_name: str) -> str:
        return self.table or names.table_for_queue(queue_name)

    def warnings(self) -> list[str]:
        """Settings that are valid but likely mistakes: apply reports them and goes on."""
        found = self.workers.poll_interval.warnings()
        longest_wait = self.workers.poll_interval.max_seconds
        if self.expire_after is not None and longest_wait > self.expire_after.total_seconds():
            found.append(
                f"workers.pollInterval.maxSeconds {longest_wait:g} is longer than expireAfter "
                f"{format_duration(self.expire_after)}: a message may expire before an idle "
                "worker looks for it"
            )
        return found

    @property
    def default_expiry_seconds(self) -> float | None:
        """`expireAfter` in seconds, None when messages never expire by default."""
        return None if self.expire_after is None else self.expire_after.total_seconds()

    @property
    def keep_processed(self) -> timedelta | None:
        """How long Processed rows are kept: None = forever, 0 = deleted at once; in dedupe
        mode window at least the window."""
        if "keep_processed_for" in self.model_fields_set:
            keep = self.keep_processed_for
        else:
            keep = None if self.idempotent else timedelta(0)
        return self.dedupe.keeps_processed(keep)

    def keep_final(self, status: str) -> timedelta | None:
        """How long rows of a final status other than Processed are kept (None = forever)."""
        field = f"keep_{status.lower()}_for"
        if field in self.model_fields_set:
            value: timedelta | None = getattr(self, field)
            return value
        return DEFAULT_KEEP_FINAL[status]

    @property
    def keep_results(self) -> timedelta | None:
        """How long the outcome of a finished message is kept in `tablequeue_results`: None =
        forever, 0 = not recorded at all. Default an hour: a client polling `GET /jobs/ID`
        finds the outcome after the row is gone (`DEFAULT_KEEP_RESULTS` says why)."""
        if "keep_results_for" in self.model_fields_set:
            return self.keep_results_for
        return DEFAULT_KEEP_RESULTS


def _null_means_unset(key: object) -> bool:
    return is_keep(key) or key in ("expireAfter", "expire_after")


class ObjectMeta(BaseModel):
    """The metadata tablequeue reads; other keys are accepted and ignored."""

    model_config = ConfigDict(extra="ignore", strict=True)

    name: QueueName = Field(description="Queue name")
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class QueueResource(SpecModel):
    api_version: Literal["tablequeue.dev/v1"] = API_VERSION
    kind: Literal["Queue"] = KIND
    metadata: ObjectMeta
    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: dict[str, Any] | None = Field(None, description="Written by the operator")

    @model_validator(mode="after")
    def _has_table(self) -> QueueResource:
        self.spec.table_for(self.name)  # e.g. a name that maps to a reserved table name
        return self

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def table(self) -> str:
        return self.spec.table_for(self.name)

    @classmethod
    def from_name(cls, name: str, namespace: str | None = None, **spec: Any) -> QueueResource:
        """Build one in code: `QueueResource.from_name("orders", max_attempts=3)`."""
        metadata = {"name": name} | ({"namespace": namespace} if namespace else {})
        return validate_queue({"metadata": metadata, "spec": spec}, f"queue {name}")


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False):
        if item["type"] == "value_error":
            message = str(item["ctx"]["error"])
        elif item["type"] == "extra_forbidden":
            message = "unknown field"
        else:
            message = item["msg"]
        where = ".".join(str(part) for part in item["loc"])
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


def validate_queue(document: object, label: str) -> QueueResource:
    try:
        return QueueResource.model_validate(document)
    except ValidationError as error:
        raise SpecError(f"{label}: {_describe(error)}") from None


def _label(source: str, index: int | None, document: object) -> str:
    """`queue.yaml document 2 (orders)`, or as much of it as is known."""
    head = " ".join(filter(None, [source, f"document {index}" if index else ""]))
    metadata = document.get("metadata") if isinstance(document, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if isinstance(name, str):
        name = name if name.isprintable() else repr(name)  # one line, whatever the name holds
        return f"{head} ({name})" if head else f"queue {name}"
    return head or "YAML"


def load_queues(text: str, source: str = "") -> list[QueueResource]:
    """Every Queue in a YAML text of one or more documents; `source` names it in errors."""
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise SpecError(f"{source or 'YAML'}: invalid YAML{where}: {problem}") from None
    several = sum(document is not None for document in documents) > 1
    queues: list[QueueResource] = []
    seen: dict[str, str] = {}
    for index, document in enumerate(documents, start=1):
        if document is None:
            continue
        label = _label(source, index if several else None, document)
        if not isinstance(document, dict):
            raise SpecError(f"{label}: expected a Queue mapping, got {type(document).__name__}")
        found = (document.get("apiVersion"), document.get("kind"))
        if found != (API_VERSION, KIND):
            raise SpecError(
                f"{label}: not a Queue: expected apiVersion {API_VERSION} and kind {KIND}, "
                f"got {found[0]!r} and {found[1]!r}"
            )
        queue = validate_queue(document, label)
        if queue.name in seen:
            raise SpecError(
                f"{label}: duplicate queue name {queue.name!r} (also {seen[queue.name]})"
            )
        seen[queue.name] = f"document {index}"
        queues.append(queue)
    return queues


def load_queue_file(path: str | Path) -> list[QueueResource]:
    """Every Queue in a YAML file, as `kubectl apply -f` would read it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise SpecError(f"{path}: cannot read: {error}") from None
    return load_queues(text, str(path))
