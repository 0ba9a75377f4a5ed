"""Strict, self-contained JSON schemas for kubeconform, from Kubernetes' OpenAPI and from CRDs.

    kubeconform_schemas.py --out DIR [--openapi swagger.json] [CRD.yaml ...]

One file per kind, named as kubeconform's `{{ .ResourceKind }}{{ .KindSuffix }}.json` template
looks it up (`deployment-apps-v1.json`, `service-v1.json`, `servicemonitor-monitoring-v1.json`),
so `kubeconform -schema-location 'DIR/{{ .ResourceKind }}{{ .KindSuffix }}.json'` finds them. What
openapi2jsonschema does for the public schema collections, standalone and strict:

- a kind's file holds the definitions it reaches (Kubernetes' are recursive, so no inlining) and
  pins `kind` and `apiVersion`;
- strict: an object with `properties` and no `additionalProperties` gets `additionalProperties:
  false` (except where a CRD keeps unknown fields);
- int-or-string and Quantity accept a string or a number, `nullable` accepts null, as the API
  server does.

Standard library only (plus PyYAML for the CRDs): scripts/build-deploy-tools runs it once per
machine with Kubernetes' swagger.json and the third-party CRDs, the chart tests run it on
crds/queue.yaml.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

DRAFT = "http://json-schema.org/draft-07/schema#"
INT_OR_STRING = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
NUMBER_OR_STRING = {"oneOf": [{"type": "string"}, {"type": "number"}]}
LOOSE_FORMATS = {"int-or-string", "quantity"}


def file_name(group: str, version: str, kind: str) -> str:
    """kubeconform's name for a kind: lower-case kind, then the group's first label, version."""
    suffix = f"-{group.split('.')[0]}-{version}" if group else f"-{version}"
    return f"{kind.lower()}{suffix}.json"


def api_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def strict(schema: Any, *, openapi_v3: bool) -> Any:
    """A copy of `schema` with no unknown properties allowed, loose types made explicit."""
    if isinstance(schema, list):
        return [strict(item, openapi_v3=openapi_v3) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if schema.get("x-kubernetes-int-or-string") or schema.get("format") == "int-or-string":
        return {"description": schema.get("description", ""), **INT_OR_STRING}
    result = {key: strict(value, openapi_v3=openapi_v3) for key, value in schema.items()}
    if "properties" in schema:
        # Property names are data, not schemas: copy them as they are, converting their values.
        result["properties"] = {
            name: strict(value, openapi_v3=openapi_v3)
            for name, value in schema["properties"].items()
        }
        keeps_unknown = schema.get("x-kubernetes-preserve-unknown-fields") is True
        if "additionalProperties" not in schema and not keeps_unknown:
            result["additionalProperties"] = False
    if openapi_v3 and schema.get("nullable") is True and isinstance(schema.get("type"), str):
        result["type"] = [schema["type"], "null"]
    return result


def references(schema: Any) -> set[str]:
    """The definition names a schema refers to (`#/definitions/NAME`)."""
    found: set[str] = set()
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/definitions/"):
            found.add(ref.removeprefix("#/definitions/"))
        for value in schema.values():
            found |= references(value)
    elif isinstance(schema, list):
        for item in schema:
            found |= references(item)
    return found


def reachable(definitions: dict[str, Any], start: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen[name] = definitions[name]
        todo.extend(references(definitions[name]) - seen.keys())
    return seen


def kind_schema(
    group: str, version: str, kind: str, body: dict[str, Any], definitions: dict[str, Any]
) -> dict[str, Any]:
    pinned = {
        "properties": {
            "apiVersion": {"enum": [api_version(group, version)]},
            "kind": {"enum": [kind]},
        },
        "required": ["apiVersion", "kind"],
    }
    schema: dict[str, Any] = {"$schema": DRAFT, "allOf": [body, pinned]}
    if definitions:
        schema["definitions"] = definitions
    return schema


def from_openapi(swagger: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Kubernetes' OpenAPI v2 document -> {file name: schema} for every kind it serves."""
    definitions = {
        name: strict(body, openapi_v3=False) for name, body in swagger["definitions"].items()
    }
    quantity = "io.k8s.apimachinery.pkg.api.resource.Quantity"
    if quantity in definitions:
        definitions[quantity] = {"description": "a quantity", **NUMBER_OR_STRING}
    files: dict[str, dict[str, Any]] = {}
    for name, body in swagger["definitions"].items():
        for gvk in body.get("x-kubernetes-group-version-kind", []):
            group, version, kind = gvk["group"], gvk["version"], gvk["kind"]
            if "apiVersion" not in body.get("properties", {}):
                continue  # a type that is never a document of its own
            files[file_name(group, version, kind)] = kind_schema(
                group,
                version,
                kind,
                {"$ref": f"#/definitions/{name}"},
                reachable(definitions, name),
            )
    return files


def from_crd(crd: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A CustomResourceDefinition -> {file name: schema} for each version with a schema."""
    spec = crd["spec"]
    group, kind = spec["group"], spec["names"]["kind"]
    files: dict[str, dict[str, Any]] = {}
    for served in spec["versions"]:
        body = (served.get("schema") or {}).get("openAPIV3Schema")
        if body is None:
            continue
        body = strict(body, openapi_v3=True)
        properties = body.setdefault("properties", {})
        properties.setdefault("apiVersion", {"type": "string"})
        properties.setdefault("kind", {"type": "string"})
        properties.setdefault("metadata", {"type": "object"})
        body.setdefault("additionalProperties", False)
        files[file_name(group, served["name"], kind)] = kind_schema(
            group, served["name"], kind, body, {}
        )
    return files


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--openapi", type=Path, help="Kubernetes' api/openapi-spec/swagger.json")
    parser.add_argument("crds", type=Path, nargs="*", help="YAML files with CRDs")
    args = parser.parse_args(argv)
    files: dict[str, dict[str, Any]] = {}
    if args.openapi:
        files |= from_openapi(json.loads(args.openapi.read_text()))
    if args.crds:
        import yaml  # only needed for CRDs; the build script runs this with the project's venv

        for path in args.crds:
            for document in yaml.safe_load_all(path.read_text()):
                if document and document.get("kind") == "CustomResourceDefinition":
                    files |= from_crd(document)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, schema in files.items():
        (args.out / name).write_text(json.dumps(schema, separators=(",", ":")))
    print(f"{len(files)} schemas in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
