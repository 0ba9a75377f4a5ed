"""Public names renamed to one name per idea keep their old name for one more release: it still
answers, with a DeprecationWarning that names the new one (CHANGELOG's Deprecated section), and
mypy reports every use of it (`enable_error_code = ["deprecated"]`), hence the ignores here."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tablequeue import FlowState, LeaseBatch, connect
from tablequeue.spec import QueueResource


def test_flow_state_old_flags_warn_and_answer_as_the_new_ones() -> None:
    limits = FlowState(datetime.now(UTC), 5.0, 10, max_leased=3)
    with pytest.warns(DeprecationWarning, match="use rate_limited"):
        assert limits.limited is limits.rate_limited is True  # type: ignore[deprecated]
    with pytest.warns(DeprecationWarning, match="use concurrency_limited"):
        assert limits.capped is limits.concurrency_limited is True  # type: ignore[deprecated]
    free = FlowState(None, None, None)
    assert not (free.rate_limited or free.concurrency_limited or free.controlled)


def test_lease_batch_at_limit_warns_and_answers_as_at_concurrency_limit() -> None:
    full = LeaseBatch("batch", "w1", [], at_concurrency_limit=True)
    with pytest.warns(DeprecationWarning, match="use at_concurrency_limit"):
        assert full.at_limit is True  # type: ignore[deprecated]


def test_spec_http_handler_is_http_handler_spec_with_a_warning() -> None:
    import tablequeue.spec

    with pytest.warns(DeprecationWarning, match="use HttpHandlerSpec"):
        old = getattr(tablequeue.spec, "HttpHandler")  # noqa: B009 (gone for type checkers)
    assert old is tablequeue.spec.HttpHandlerSpec
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        getattr(tablequeue.spec, "NoSuchName")  # noqa: B009


def test_queue_database_is_queue_storage_with_a_warning(tmp_path: Path) -> None:
    with connect(f"sqlite:///{tmp_path / 'q.db'}") as database:
        database.apply(QueueResource.from_name("orders"))
        queue = database.queue("orders")
        with pytest.warns(DeprecationWarning, match="use storage"):
            assert queue.database is queue.storage is database  # type: ignore[deprecated]
