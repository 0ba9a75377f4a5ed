"""The line for a misspelt field of a request body: "unknown field 'mesage' (did you mean
'message'?)", with the fields the body accepts at that place, found in the route's body model."""

from __future__ import annotations

import difflib
import typing
from typing import Any

from fastapi import Request
from pydantic import AliasChoices, BaseModel
from pydantic.fields import FieldInfo


def body_annotation(request: Request) -> Any:
    """The type of the body the request's route takes, or None."""
    body_field = getattr(request.scope.get("route"), "body_field", None)
    return body_field.field_info.annotation if body_field is not None else None


def accepted_fields(annotation: Any, path: list[str]) -> dict[str, bool]:
    """The JSON names of the fields accepted at `path` (list indexes as digits) in a body of type
    `annotation`, each with whether it is required; empty when no model is there."""
    return {
        _json_name(name, info): info.is_required()
        for model in _models_at(annotation, path)
        for name, info in model.model_fields.items()
    }


def closest(field: str, accepted: list[str]) -> str | None:
    matches = difflib.get_close_matches(field, accepted, n=1)
    return matches[0] if matches else None


def line(field: str, accepted: list[str]) -> str:
    """ "unknown field 'x'" with the closest accepted name, or else the accepted names."""
    match = closest(field, accepted)
    if match is not None:
        return f"unknown field {field!r} (did you mean {match!r}?)"
    if accepted:
        return f"unknown field {field!r} (accepted: {', '.join(accepted)})"
    return f"unknown field {field!r}"


def _models_at(annotation: Any, path: list[str]) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    for candidate in _alternatives(annotation):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            if not path:
                found.append(candidate)
                continue
            info = _field_named(candidate, path[0])
            if info is not None:
                found += _models_at(info.annotation, path[1:])
        elif path and path[0].isdigit() and typing.get_origin(candidate) is list:
            found += _models_at(typing.get_args(candidate)[0], path[1:])
    return found


def _alternatives(annotation: Any) -> list[Any]:
    """The types a union (or Optional) allows; the type itself otherwise."""
    if typing.get_origin(annotation) in (typing.Union, type(int | str)):
        return [a for a in typing.get_args(annotation) if a is not type(None)]
    return [annotation]


def _field_named(model: type[BaseModel], json_name: str) -> FieldInfo | None:
    return next(
        (info for name, info in model.model_fields.items() if _json_name(name, info) == json_name),
        None,
    )


def _json_name(name: str, info: FieldInfo) -> str:
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        first = alias.choices[0]
        return first if isinstance(first, str) else name
    if isinstance(alias, str):
        return alias
    return info.alias or name
