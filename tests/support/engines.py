"""`db_url` for the floors above the core: the worker, the API, the CLI and the pipeline run the
core's statements through its public names, and the conformance suite (tests/core) proves those
on every driver. So these floors take each engine once (`EACH_ENGINE_ONCE`: MariaDB through
PyMySQL, not again through ODBC): a second driver to the same server repeats their tests
without testing anything of theirs (about 8 worker-minutes a run).

A folder's conftest.py imports `db_url_each_engine_once`; its name makes it that folder's
`db_url`. A test of one of these floors whose subject is a driver takes that driver's URL fixture
(`mariadb_odbc_url`) itself."""

from __future__ import annotations

import pytest

from tests.conftest import EACH_ENGINE_ONCE, engine_url


@pytest.fixture(params=EACH_ENGINE_ONCE, name="db_url")
def db_url_each_engine_once(request: pytest.FixtureRequest) -> str:
    return engine_url(request)
