"""Fixtures of the CLI tests: each engine once (`tests.support.engines`)."""

from tests.support.engines import db_url_each_engine_once  # noqa: F401 (this folder's db_url)
