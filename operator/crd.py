"""The Queue CustomResourceDefinition, generated from the pydantic spec so the two never drift.

    python -m tablequeue.operator.crd > crds/queue.yaml

The pydantic JSON schema becomes a Kubernetes structural schema: references inlined, optional
fields without their `null` branch, no titles, OpenAPI v3's boolean `exclusiveMinimum`.
Unknown fields need no `additionalProperties: false`: the API server prunes them, and kubectl's
strict field validation rejects them.
"""

from __future__ import annotations

import sys
from typing import Any

import yaml

from tablequeue.spec import API_VERSION, QueueSpec

GROUP, VERSION = API_VERSION.split("/")
PLURAL = "queues"


def structural(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    schema = dict(schema)
    if "$ref" in schema:
        target = defs[schema.pop("$ref").split("/")[-1]]
        schema = {**target, **schema}
    options = schema.get("anyOf")
    if options and {"type": "null"} in options:
        remaining = [o for o in options if o != {"type": "null"}]
        del schema["anyOf"]
        if len(remaining) == 1:
            schema = {**remaining[0], **schema}
        else:
            schema["anyOf"] = remaining
    if schema.get("default", 0) is None:
        del schema["default"]
    for key in ("title", "additionalProperties", "$defs"):
        schema.pop(key, None)
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        schema["minimum"] = schema["exclusiveMinimum"]
        schema["exclusiveMinimum"] = True
    if "$ref" in schema or ("anyOf" in schema and any("$ref" in o for o in schema["anyOf"])):
        return structural(schema, defs)
    if "properties" in schema:
        schema["properties"] = {
            name: structural(value, defs) for name, value in schema["properties"].items()
        }
    if "items" in schema:
        schema["items"] = structural(schema["items"], defs)
    return schema


# Rules across fields that pydantic checks in validators, as CEL rules the API server enforces.
CROSS_FIELD_RULES: dict[tuple[str, ...], list[dict[str, str]]] = {
    (): [
        {
            "rule": "!has(self.workers) || !has(self.workers.autoscaling)"
            " || self.workers.autoscaling.mode != 'KEDA' || !has(self.database)"
            " || !has(self.database.dialect) || self.database.dialect == 'postgresql'",
            "message": "autoscaling mode KEDA reads the backlog with KEDA's postgresql scaler:"
            " database.dialect must be postgresql",
        }
    ],
    ("workers", "handler"): [
        {
            "rule": "has(self.http) != has(self.python)",
            "message": "give exactly one of http or python",
        }
    ],
    ("workers", "pollInterval"): [
        {
            "rule": "self.minSeconds <= self.maxSeconds",
            "message": "minSeconds must be <= maxSeconds",
        }
    ],
    ("workers", "autoscaling"): [
        {
            "rule": "self.minReplicas <= self.maxReplicas",
            "message": "minReplicas must be <= maxReplicas",
        }
    ],
}


def spec_schema() -> dict[str, Any]:
    raw = QueueSpec.model_json_schema(by_alias=True)
    schema = structural(raw, raw.get("$defs", {}))
    for path, rules in CROSS_FIELD_RULES.items():
        node = schema
        for name in path:
            node = node["properties"][name]
        node["x-kubernetes-validations"] = rules
    return schema


def _column(name: str, json_path: str, kind: str = "integer", **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "jsonPath": json_path, **extra}


def custom_resource_definition() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": "Queue",
                "listKind": "QueueList",
                "plural": PLURAL,
                "singular": "queue",
                "shortNames": ["tq"],
                "categories": ["tablequeue"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        # `columns`, not `counts`: counts leaves out a status with no
                        # message, and the column would be blank instead of 0.
                        _column("Pending", ".status.columns.pending"),
                        _column("Leased", ".status.columns.leased"),
                        _column("Errors", ".status.columns.errors"),
                        _column("Replicas", ".status.replicas.desired"),
                        _column("Health", ".status.health", "string"),
                        _column("Paused", ".status.paused", "boolean"),
                        _column("Ready", '.status.conditions[?(@.type=="Ready")].status', "string"),
                        _column("Age", ".metadata.creationTimestamp", "date"),
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "A message queue that lives in one SQL table.",
                            "properties": {
                                "spec": spec_schema(),
                                "status": {
                                    "type": "object",
                                    "description": "Written by the operator",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


def render() -> str:
    header = (
        "# Generated by `python -m tablequeue.operator.crd` from tablequeue/spec/: do not edit.\n"
    )
    return header + yaml.safe_dump(custom_resource_definition(), sort_keys=False, width=100)


if __name__ == "__main__":
    sys.stdout.write(render())
