"""Click options generated from the fields of a pydantic model: flag, type and range, default,
help and environment variable all come from the model, so no option is written twice."""

from __future__ import annotations

import os
import types
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo

F = TypeVar("F", bound=Callable[..., Any])


class EnvOption(click.Option):
    """An option that, given a bad value by an environment variable, names the variable; missing,
    says that the variable may give it."""

    def process_value(self, ctx: click.Context, value: Any) -> Any:
        try:
            return super().process_value(ctx, value)
        except click.MissingParameter:
            if not self._envvars():
                raise
            variables = " or ".join(self._envvars())
            raise click.MissingParameter(
                f"Give {self.opts[0]} or set {variables}.", ctx=ctx, param=self
            ) from None
        except click.BadParameter as error:
            if ctx.get_parameter_source(self.name or "") is click.core.ParameterSource.ENVIRONMENT:
                variable = next((v for v in self._envvars() if os.environ.get(v)), None)
                if variable is not None:
                    error.param_hint = f"{self.opts[0]} (from {variable})"
            raise

    def get_error_hint(self, ctx: click.Context | None) -> str:
        """The flag alone: click would add the variables even when the flag gave the value."""
        return " / ".join(f"'{opt}'" for opt in self.opts)

    def _envvars(self) -> list[str]:
        if self.envvar is None:
            return []
        return [self.envvar] if isinstance(self.envvar, str) else list(self.envvar)


def model_options(
    model: type[BaseModel],
    env_name: Callable[[str], str | Sequence[str]],
    *,
    metavars: Mapping[str, str] | None = None,
    hidden: Collection[str] = (),
    flags: Mapping[str, str] | None = None,
    omit: Collection[str] = (),
) -> Callable[[F], F]:
    """One `--field-name` option per field, in the model's order, read also from `env_name(field)`
    (a variable, or several: the first set one). `flags` gives a field other flags than
    `--field-name`, e.g. `"--standalone/--peering"`; a tuple field is a repeatable option.
    The fields of `omit` get no option (the command reads them its own way).

    An option the user does not give (and whose variable is unset) arrives as its default, or
    None for fields without one: drop those None values to let the model fill them in.
    """

    def decorate(function: F) -> F:
        for name, field in reversed(model.model_fields.items()):
            if name in omit:
                continue
            flag = "--" + name.replace("_", "-")
            attributes = _attributes(field)
            if attributes.get("default") is True:  # a flag on by default needs its --no- form
                flag = f"{flag}/--no-{flag[2:]}"
            flag = (flags or {}).get(name, flag)
            envvar = env_name(name)
            option = click.option(
                flag,
                name,
                cls=EnvOption,
                envvar=envvar if isinstance(envvar, str) else list(envvar),
                metavar=(metavars or {}).get(name),
                hidden=name in hidden,
                help=field.description,
                # The variables in the help, unless the description names them already.
                show_envvar="[env " not in (field.description or ""),
                **attributes,
            )
            function = option(function)
        return function

    return decorate


def _attributes(field: FieldInfo) -> dict[str, Any]:
    attributes: dict[str, Any] = {"required": field.is_required()}
    # No default for required fields, nor for one the model computes (e.g. a name unique to the
    # process): click must not stand in for them.
    if not field.is_required() and field.default_factory is None:
        attributes["default"] = field.default
        attributes["show_default"] = field.default not in (None, False)
    value_type = _without_none(field.annotation)
    if value_type is bool:
        attributes["is_flag"] = True
    elif get_origin(value_type) is tuple:  # tuple[X, ...]: the option given once per value
        attributes["multiple"] = True
        attributes["type"] = _click_type(get_args(value_type)[0], [])
        attributes["show_default"] = False
    else:
        attributes["type"] = _click_type(value_type, field.metadata)
    return attributes


def _without_none(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        [value_type] = [arg for arg in get_args(annotation) if arg is not type(None)]
        return value_type
    return annotation


def _click_type(value_type: Any, metadata: list[Any]) -> click.ParamType[Any]:
    if get_origin(value_type) is Literal:
        return click.Choice([str(choice) for choice in get_args(value_type)], case_sensitive=False)
    # pydantic keeps `Field(ge=..., le=...)` as annotated-types constraints in the metadata.
    low = next((m.ge for m in metadata if hasattr(m, "ge")), None)
    high = next((m.le for m in metadata if hasattr(m, "le")), None)
    bounded = low is not None or high is not None
    if value_type is int:
        return click.IntRange(low, high) if bounded else click.INT
    if value_type is float:
        return click.FloatRange(low, high) if bounded else click.FLOAT
    if value_type is str:
        return click.STRING
    raise TypeError(f"no click option type for {value_type!r}")
