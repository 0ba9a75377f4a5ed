"""The API's options: the core's `ApiSettings` (in the core so that the `tablequeue` command
builds its flags without the api extra), under the API's roof."""

from tablequeue.settings.api import ApiSettings, env_names

__all__ = ["ApiSettings", "env_names"]
