"""The environment variables of a settings model's fields (the API's and the operator's).

A field made with `env_field(default, "TABLEQUEUE_X", "TABLEQUEUE_Y", ...)` is read from the first
of those variables that is set (pydantic-settings, the model's own), and by its name from
keyword arguments and the command line's flags (`populate_by_name`).
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, Field


def env_field(default: Any, *names: str, **field: Any) -> Any:
    """A pydantic field read from the variables `names`, the first set one."""
    if not names:
        raise ValueError("a settings field needs at least one environment variable")
    return Field(default, validation_alias=AliasChoices(*names), **field)


def env_names_of(model: type[BaseModel], field: str) -> tuple[str, ...]:
    """The variables of `model`'s `field`, in the order they are looked up."""
    if field not in model.model_fields:
        raise KeyError(f"{model.__name__} has no option {field!r}")
    alias = model.model_fields[field].validation_alias
    if not isinstance(alias, AliasChoices):
        raise TypeError(f"{model.__name__}.{field} was not made with env_field")
    return tuple(str(choice) for choice in alias.choices)
