"""The operator's options: the core's `OperatorSettings` (in the core so that the `tablequeue`
command builds its flags without the operator extra), under the operator's roof."""

from tablequeue.settings.operator import OperatorSettings, OverLimit, env_names

__all__ = ["OperatorSettings", "OverLimit", "env_names"]
