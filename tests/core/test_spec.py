"""The Queue resource models: defaults, aliases, validation messages, durations, YAML loading."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tablequeue.durations import format_duration, parse_duration
from tablequeue.errors import InvalidInput, SpecError
from tablequeue.spec import (
    QueueResource,
    QueueSpec,
    load_queue_file,
    load_queues,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def queue_yaml(name: str = "orders", **spec: Any) -> str:
    document = {"apiVersion": "tablequeue.dev/v1", "kind": "Queue", "metadata": {"name": name}}
    if spec:
        document["spec"] = spec
    return yaml.safe_dump(document)


def spec_error(**spec: Any) -> str:
    with pytest.raises(SpecError) as caught:
        load_queues(queue_yaml(**spec))
    message = str(caught.value)
    assert "\n" not in message
    return message


# defaults


def test_defaults() -> None:
    (queue,) = load_queues(queue_yaml())
    spec = queue.spec
    assert queue.name == "orders" and queue.table == "orders"
    assert queue.api_version == "tablequeue.dev/v1" and queue.kind == "Queue"
    assert spec.database is None and spec.table is None
    assert spec.category == "Default" and spec.default_status == "Pending"
    assert spec.lease_seconds == 1800 and spec.on_lease_expired == "Abandon"
    assert spec.max_attempts == 1
    assert (spec.retry.delay_seconds, spec.retry.backoff) == (10, "exponential")
    assert (spec.retry.max_delay_seconds, spec.retry.jitter) == (3600, 0.1)
    assert spec.idempotent is False and spec.keep_processed_for is None
    assert spec.keep_processed == timedelta(0)
    assert spec.health.enabled and spec.health.max_oldest_pending_seconds == 0
    assert spec.health.when_errors == spec.health.when_abandoned == "Unhealthy"
    assert spec.deletion_policy == "Retain" and spec.example_message is None
    workers = spec.workers
    assert workers.handler.python is None and workers.handler.http is not None
    http = workers.handler.http
    assert (http.port, http.path, http.timeout_seconds) == (8080, "/process", 30)
    assert workers.template is None and workers.image is None
    assert (workers.batch_size, workers.concurrency) == (10, 4)
    assert (workers.execution_timeout_seconds, workers.grace_period_seconds) == (0, 30)
    assert workers.app_readiness_path == "/"
    assert (workers.poll_interval.min_seconds, workers.poll_interval.max_seconds) == (0.1, 5)
    scaling = workers.autoscaling
    assert (scaling.mode, scaling.min_replicas, scaling.max_replicas) == ("Operator", 0, 10)
    assert (scaling.messages_per_replica, scaling.cooldown_seconds) == (100, 60)


def test_database_secret_key_defaults_to_url() -> None:
    spec = QueueSpec.model_validate({"database": {"secretRef": {"name": "db"}}})
    assert spec.database is not None
    assert (spec.database.secret_ref.name, spec.database.secret_ref.key) == ("db", "url")
    assert spec.database.dialect is None


# aliases


def test_camel_case_in_snake_case_attributes_and_back() -> None:
    raw = {
        "leaseSeconds": 60,
        "onLeaseExpired": "Retry",
        "keepProcessedFor": "1h30m",
        "retry": {"delaySeconds": 1.5, "maxDelaySeconds": 60, "backoff": "fixed"},
        "workers": {
            "handler": {"python": "shop.handlers:confirm"},
            "pollInterval": {"minSeconds": 0.5, "maxSeconds": 2},
            "autoscaling": {"mode": "KEDA", "messagesPerReplica": 7},
        },
    }
    spec = QueueSpec.model_validate(raw)
    assert spec.lease_seconds == 60 and spec.on_lease_expired == "Retry"
    assert spec.keep_processed_for == timedelta(hours=1, minutes=30)
    assert spec.workers.poll_interval.min_seconds == 0.5
    dumped = spec.model_dump(by_alias=True)
    assert dumped["leaseSeconds"] == 60 and dumped["keepProcessedFor"] == "1h30m"
    assert dumped["workers"]["autoscaling"]["messagesPerReplica"] == 7
    assert "lease_seconds" not in dumped
    assert QueueSpec.model_validate(dumped) == spec


def test_snake_case_input_is_accepted() -> None:
    spec = QueueSpec.model_validate({"lease_seconds": 60, "max_attempts": 3})
    assert (spec.lease_seconds, spec.max_attempts) == (60, 3)


def test_resource_round_trip_through_json_and_yaml() -> None:
    (queue,) = load_queue_file(EXAMPLES / "queue.yaml")
    as_json = queue.model_dump(by_alias=True, mode="json")
    assert as_json["spec"]["workers"]["handler"]["python"] == "tablequeue.examples:handle"
    again = load_queues(yaml.safe_dump(as_json))
    assert again == [queue]
    assert QueueResource.model_validate_json(json.dumps(as_json)) == queue


def test_unset_keep_processed_for_stays_unset_after_round_trip() -> None:
    queue = QueueResource.from_name("products", idempotent=True)
    dumped = queue.model_dump(by_alias=True, mode="json")
    assert dumped["spec"]["keepProcessedFor"] is None
    again = QueueResource.model_validate(dumped)
    assert again.spec.keep_processed is None  # forever, because idempotent
    again = QueueResource.model_validate(dumped | {"spec": dumped["spec"] | {"idempotent": False}})
    assert again.spec.keep_processed == timedelta(0)


# derived properties


@pytest.mark.parametrize(
    ("fields", "kept"),
    [
        ({}, timedelta(0)),
        ({"idempotent": True}, None),
        ({"idempotent": True, "keepProcessedFor": "2w"}, timedelta(days=14)),
        ({"idempotent": True, "keepProcessedFor": "0s"}, timedelta(0)),
        ({"keepProcessedFor": "forever"}, None),
        ({"keepProcessedFor": 90}, timedelta(seconds=90)),
        ({"idempotent": True, "keepProcessedFor": None}, None),  # null = unset
    ],
)
def test_keep_processed(fields: dict[str, Any], kept: timedelta | None) -> None:
    assert QueueSpec.model_validate(fields).keep_processed == kept


def test_table_for() -> None:
    assert QueueSpec().table_for("send-order-confirmation") == "send_order_confirmation"
    assert QueueSpec(table="orders_v2").table_for("orders") == "orders_v2"
    queue = QueueResource.from_name("send-order-confirmation", table="confirmations")
    assert queue.table == "confirmations"


def test_from_name() -> None:
    queue = QueueResource.from_name("orders", namespace="shop", max_attempts=3, category="Orders")
    assert (queue.name, queue.metadata.namespace) == ("orders", "shop")
    assert (queue.spec.max_attempts, queue.spec.category) == (3, "Orders")
    with pytest.raises(SpecError, match=r"^queue orders: spec\.max_attempts: Input should be"):
        QueueResource.from_name("orders", max_attempts=0)
    with pytest.raises(SpecError, match="invalid queue name 'Orders'"):
        QueueResource.from_name("Orders")


# validation messages


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"leaseSeconds": 0}, "spec.leaseSeconds: Input should be greater than or equal to 1"),
        ({"leaseSeconds": 7 * 86400 + 1}, "spec.leaseSeconds: Input should be less than or equal"),
        ({"leaseSeconds": "60"}, "spec.leaseSeconds: Input should be a valid integer"),
        ({"leaseSecond": 60}, "spec.leaseSecond: unknown field"),
        ({"maxAttempts": 0}, "spec.maxAttempts: Input should be greater than or equal to 1"),
        ({"maxAttempts": 1001}, "spec.maxAttempts: Input should be less than or equal to 1000"),
        ({"onLeaseExpired": "Drop"}, "spec.onLeaseExpired: Input should be 'Abandon' or 'Retry'"),
        ({"deletionPolicy": "Keep"}, "spec.deletionPolicy: Input should be 'Retain' or 'Delete'"),
        ({"category": ""}, "spec.category: String should have at least 1 character"),
        ({"category": "x" * 101}, "spec.category: String should have at most 100 characters"),
        ({"defaultStatus": "Leased"}, "spec.defaultStatus: status 'Leased' is set only by leasing"),
        ({"defaultStatus": "On Hold"}, "spec.defaultStatus: invalid status 'On Hold'"),
        ({"table": "Orders"}, "spec.table: invalid table name 'Orders'"),
        ({"table": "tablequeue_x"}, "spec.table: invalid table name 'tablequeue_x': the prefix"),
        ({"database": {"dialect": "oracle", "secretRef": {"name": "db"}}}, "spec.database.dialect"),
        ({"database": {}}, "spec.database.secretRef: Field required"),
        ({"retry": {"delaySeconds": -1}}, "spec.retry.delaySeconds: Input should be greater"),
        ({"retry": {"backoff": "linear"}}, "spec.retry.backoff: Input should be 'fixed' or"),
        ({"retry": {"jitter": 1.5}}, "spec.retry.jitter: Input should be less than or equal to 1"),
        ({"health": {"whenErrors": "Bad"}}, "spec.health.whenErrors: Input should be 'Healthy',"),
        ({"health": {"maxOldestPendingSeconds": -1}}, "spec.health.maxOldestPendingSeconds"),
        ({"keepProcessedFor": "abc"}, "spec.keepProcessedFor: invalid duration 'abc': use e.g."),
        ({"idempotent": "yes please"}, "spec.idempotent: Input should be a valid boolean"),
        ({"workers": {"batchSize": 0}}, "spec.workers.batchSize: Input should be greater"),
        ({"workers": {"batchSize": 1001}}, "spec.workers.batchSize: Input should be less"),
        ({"workers": {"concurrency": 0}}, "spec.workers.concurrency: Input should be greater"),
        ({"workers": {"gracePeriodSeconds": -1}}, "spec.workers.gracePeriodSeconds: Input"),
        ({"workers": {"appReadinessPath": "healthz"}}, "spec.workers.appReadinessPath: String"),
        ({"workers": {"executionTimeoutSeconds": -1}}, "spec.workers.executionTimeoutSeconds"),
        ({"workers": {"image": ""}}, "spec.workers.image: String should have at least 1"),
        ({"workers": {"handler": {}}}, "spec.workers.handler: set exactly one of http or python"),
        (
            {"workers": {"handler": {"http": {}, "python": "a:b"}}},
            "spec.workers.handler: set exactly one of http or python",
        ),
        (
            {"workers": {"handler": {"python": "pkg.mod.func"}}},
            "spec.workers.handler.python: invalid python handler 'pkg.mod.func': use",
        ),
        (
            {"workers": {"handler": {"python": "pkg:func\n"}}},
            "spec.workers.handler.python: invalid python handler",
        ),
        (
            {"workers": {"handler": {"http": {"port": 70000}}}},
            "spec.workers.handler.http.port: Input should be less than or equal to 65535",
        ),
        (
            {"workers": {"handler": {"http": {"path": "process"}}}},
            "spec.workers.handler.http.path: String should match pattern '^/'",
        ),
        (
            {"workers": {"handler": {"http": {"timeoutSeconds": 0}}}},
            "spec.workers.handler.http.timeoutSeconds: Input should be greater than 0",
        ),
        (
            {"workers": {"pollInterval": {"minSeconds": 10, "maxSeconds": 5}}},
            "spec.workers.pollInterval: minSeconds (10) must not exceed maxSeconds (5)",
        ),
        (
            {"workers": {"pollInterval": {"minSeconds": 0}}},
            "spec.workers.pollInterval.minSeconds: Input should be greater than 0",
        ),
        (
            {"workers": {"autoscaling": {"minReplicas": 5, "maxReplicas": 2}}},
            "spec.workers.autoscaling: minReplicas (5) must not exceed maxReplicas (2)",
        ),
        (
            {"workers": {"autoscaling": {"mode": "Manual"}}},
            "spec.workers.autoscaling.mode: Input should be 'Operator', 'HPA', 'KEDA' or 'None'",
        ),
        (
            {"workers": {"autoscaling": {"maxReplicas": 0}}},
            "spec.workers.autoscaling.maxReplicas: Input should be greater than or equal to 1",
        ),
        (
            {"workers": {"autoscaling": {"messagesPerReplica": 0}}},
            "spec.workers.autoscaling.messagesPerReplica: Input should be greater",
        ),
    ],
)
def test_validation_errors(spec: dict[str, Any], message: str) -> None:
    assert spec_error(**spec).startswith(f"queue orders: {message}")


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ({"metadata": "app"}, "metadata: expected an object, got a string"),
        ({"metadata": {"labels": ["a"]}}, "metadata.labels: expected an object, got a list"),
        ({"metadata": {"annotations": "a=b"}}, "metadata.annotations: expected an object"),
        ({"spec": []}, "spec: expected an object, got a list"),
        ({"spec": {"containers": {"name": "app"}}}, "spec.containers: expected a list, got an"),
        ({"spec": {"containers": ["app"]}}, "spec.containers[0]: expected an object (a container)"),
        (
            {"spec": {"containers": [{"name": "app", "lifecycle": "none"}]}},
            "spec.containers[0].lifecycle: expected an object, got a string",
        ),
        (
            {"spec": {"terminationGracePeriodSeconds": "30"}},
            "spec.terminationGracePeriodSeconds: expected a whole number, got a string",
        ),
    ],
)
def test_a_pod_template_whose_parts_are_not_of_their_kind_is_refused(
    template: dict[str, Any], message: str
) -> None:
    """Issue 44 (L6): the operator read these parts as they are and failed with no reason,
    leaving the Queue Reconciling."""
    problem = spec_error(workers={"template": template})
    assert problem.startswith(f"queue orders: spec.workers.template: {message}"), problem


def test_several_problems_are_reported_on_one_line() -> None:
    message = spec_error(leaseSeconds=0, maxAttempts=0)
    assert "spec.leaseSeconds: " in message and "; spec.maxAttempts: " in message


def test_valid_python_handlers_and_free_form_fields() -> None:
    for handler in ("handlers:run", "shop.orders.handlers:send_confirmation", "_m:_f"):
        spec = QueueSpec.model_validate({"workers": {"handler": {"python": handler}}})
        assert spec.workers.handler.python == handler
    template = {"spec": {"containers": [{"name": "app", "image": "app:1"}]}, "anything": 1}
    spec = QueueSpec.model_validate({"workers": {"template": template}, "exampleMessage": [1]})
    assert spec.workers.template == template and spec.example_message == [1]


def test_metadata() -> None:
    text = queue_yaml().replace(
        "name: orders",
        "name: orders\n  namespace: shop\n  labels: {team: a}\n  uid: 123\n  generation: 4",
    )
    (queue,) = load_queues(text)
    assert queue.metadata.namespace == "shop" and queue.metadata.labels == {"team": "a"}
    for bad, message in [
        ("Orders", "metadata.name: invalid queue name 'Orders'"),
        ("orders-", "metadata.name: invalid queue name 'orders-'"),
        ("x" * 64, "metadata.name: invalid queue name"),
    ]:
        with pytest.raises(SpecError, match=f"^queue {bad}: {message}"):
            load_queues(queue_yaml(bad))
    with pytest.raises(SpecError, match="metadata: Field required"):
        load_queues("apiVersion: tablequeue.dev/v1\nkind: Queue\n")
    with pytest.raises(SpecError, match="invalid table name 'tablequeue_x'"):
        load_queues(queue_yaml("tablequeue-x"))  # the table name it maps to is reserved
    (queue,) = load_queues(queue_yaml("tablequeue-x", table="x"))
    assert queue.table == "x"


def test_spec_error_is_invalid_input() -> None:
    assert issubclass(SpecError, InvalidInput) and issubclass(SpecError, ValueError)


# durations


@pytest.mark.parametrize(
    ("text", "parsed", "formatted"),
    [
        ("0s", timedelta(0), "0s"),
        ("90s", timedelta(seconds=90), "1m30s"),
        ("5m", timedelta(minutes=5), "5m"),
        ("1h30m", timedelta(hours=1, minutes=30), "1h30m"),
        ("7d", timedelta(days=7), "7d"),
        ("2w", timedelta(weeks=2), "14d"),
        ("1d2h3m4s", timedelta(days=1, hours=2, minutes=3, seconds=4), "1d2h3m4s"),
        ("1.5s", timedelta(seconds=1.5), "1.5s"),
        (0, timedelta(0), "0s"),
        (3600, timedelta(hours=1), "1h"),
        (0.25, timedelta(seconds=0.25), "0.25s"),
        ("forever", None, "forever"),
    ],
)
def test_durations(text: object, parsed: timedelta | None, formatted: str) -> None:
    assert parse_duration(text) == parsed
    assert format_duration(parsed) == formatted
    assert parse_duration(formatted) == parsed


@pytest.mark.parametrize(
    "garbage",
    ["abc", "", "5", "5m\n", "5 m", "1m1h", "-5s", "1.5m", "FOREVER", -1, True, None, 1e300],
)
def test_invalid_durations(garbage: object) -> None:
    with pytest.raises(ValueError, match=r"^invalid duration .*: use e\.g\. 30s, 5m, 1h30m, 7d"):
        parse_duration(garbage)


def test_invalid_duration_message_is_exact() -> None:
    with pytest.raises(ValueError) as caught:
        parse_duration("abc")
    assert str(caught.value) == "invalid duration 'abc': use e.g. 30s, 5m, 1h30m, 7d or forever"


# loading


def orders_and(second: str) -> str:
    return queue_yaml() + "---\n" + second


def test_several_documents_and_empty_ones() -> None:
    text = "---\n" + queue_yaml("a") + "---\n---\n# nothing\n---\n" + queue_yaml("b") + "---\n"
    assert [queue.name for queue in load_queues(text)] == ["a", "b"]
    assert load_queues("") == [] and load_queues("# just a comment\n") == []


def test_error_names_file_document_and_queue(tmp_path: Path) -> None:
    path = tmp_path / "queue.yaml"
    path.write_text(orders_and(queue_yaml("orders-2", leaseSeconds=0)))
    with pytest.raises(SpecError) as caught:
        load_queue_file(path)
    assert str(caught.value) == (
        f"{path} document 2 (orders-2): spec.leaseSeconds: "
        "Input should be greater than or equal to 1"
    )
    path.write_text(queue_yaml(leaseSeconds=0))  # one document: no index
    with pytest.raises(SpecError, match=rf"^{path} \(orders\): spec\.leaseSeconds: "):
        load_queue_file(path)
    with pytest.raises(SpecError, match=r"^q\.yaml document 2 \(orders-2\): spec\.leaseSeconds"):
        load_queues(orders_and(queue_yaml("orders-2", leaseSeconds=0)), "q.yaml")


def test_duplicate_names() -> None:
    with pytest.raises(SpecError, match=r"document 2 \(orders\): duplicate queue name 'orders'"):
        load_queues(orders_and(queue_yaml()), "q.yaml")


def test_other_kinds_are_errors() -> None:
    config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"
    with pytest.raises(SpecError) as caught:
        load_queues(orders_and(config_map), "all.yaml")
    assert str(caught.value) == (
        "all.yaml document 2 (settings): not a Queue: expected apiVersion tablequeue.dev/v1 "
        "and kind Queue, got 'v1' and 'ConfigMap'"
    )
    with pytest.raises(SpecError, match=r"got 'tablequeue\.dev/v2' and 'Queue'"):
        load_queues(queue_yaml().replace("/v1", "/v2"))
    with pytest.raises(SpecError, match="got None and None"):
        load_queues("metadata: {name: orders}\n")


def test_documents_that_are_not_mappings() -> None:
    with pytest.raises(SpecError, match=r"^document 2: expected a Queue mapping, got list$"):
        load_queues(orders_and("- a\n- b\n"))
    with pytest.raises(SpecError, match=r"^YAML: expected a Queue mapping, got str$"):
        load_queues("just text\n")


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(queue_yaml() + "spec:\n  category: [Orders\n  maxAttempts: 3\n")
    with pytest.raises(SpecError) as caught:
        load_queue_file(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: invalid YAML at line ") and "\n" not in message
    with pytest.raises(SpecError, match=r"^YAML: invalid YAML at line 2, column 5: "):
        load_queues("a: 1\nb: c: d\n")


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"nope\.yaml: no such file$"):
        load_queue_file(tmp_path / "nope.yaml")
    with pytest.raises(SpecError, match="cannot read"):
        load_queue_file(tmp_path)
    (tmp_path / "latin1.yaml").write_bytes(b"name: \xe9\n")
    with pytest.raises(SpecError, match="cannot read"):
        load_queue_file(tmp_path / "latin1.yaml")


# examples


def test_example_queue() -> None:
    (queue,) = load_queue_file(EXAMPLES / "queue.yaml")
    spec = queue.spec
    assert queue.name == "send-order-confirmation" and queue.table == "send_order_confirmation"
    assert spec.category == "Orders" and spec.max_attempts == 3
    assert spec.retry.backoff == "exponential" and spec.health.enabled
    assert spec.workers.handler.python == "tablequeue.examples:handle"
    assert spec.example_message == {"OrderId": "A-1001", "Email": "ann@example.com"}


def test_example_queues() -> None:
    queues = {queue.name: queue for queue in load_queue_file(EXAMPLES / "queues.yaml")}
    assert len(queues) >= 2 and "product-updates" in queues
    products = queues["product-updates"].spec
    assert products.idempotent and products.keep_processed is None


# JSON schema, for generating the CRD


def test_json_schema() -> None:
    schema = QueueSpec.model_json_schema(by_alias=True)
    text = json.dumps(schema)
    definitions = schema["$defs"]
    properties = schema["properties"]

    def resolve(node: dict[str, Any], seen: tuple[str, ...] = ()) -> None:
        """Every $ref resolves, and none refers back to a definition it is inside of."""
        for key, value in node.items():
            if key == "$ref":
                name = value.rsplit("/", 1)[-1]
                assert name not in seen, f"$ref loop through {name}"
                resolve(definitions[name], (*seen, name))
            elif isinstance(value, dict):
                resolve(value, seen)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, dict):
                        resolve(item, seen)

    resolve(schema)
    assert properties["leaseSeconds"] == properties["leaseSeconds"] | {
        "type": "integer",
        "minimum": 1,
        "maximum": 604800,
        "default": 1800,
    }
    assert properties["onLeaseExpired"]["enum"] == ["Abandon", "Retry"]
    assert properties["deletionPolicy"]["enum"] == ["Retain", "Delete"]
    assert properties["category"]["maxLength"] == 100
    assert definitions["Autoscaling"]["properties"]["mode"]["enum"] == [
        "Operator",
        "HPA",
        "KEDA",
        "None",
    ]
    assert definitions["HttpHandlerSpec"]["properties"]["port"]["maximum"] == 65535
    assert definitions["RetryPolicy"]["properties"]["jitter"]["maximum"] == 1
    assert definitions["RetryPolicy"]["additionalProperties"] is False
    keep = properties["keepProcessedFor"]
    assert keep["x-kubernetes-int-or-string"] is True and "pattern" in keep
    assert definitions["WorkerSpec"]["properties"]["template"][
        "x-kubernetes-preserve-unknown-fields"
    ]
    assert "exampleMessage" in properties and '"description"' in text
    assert "lease_seconds" not in text
    assert "$defs" in QueueResource.model_json_schema()
