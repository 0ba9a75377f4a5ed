"""The one table from the core's errors to HTTP statuses, shared by the JSON API and the UI."""

from __future__ import annotations

import pytest

from tablequeue import errors
from tablequeue.api.http_errors import STATUS_BY_ERROR, status_of


def every_error_class() -> list[type[errors.TableQueueError]]:
    found: list[type[errors.TableQueueError]] = []
    pending = [errors.TableQueueError]
    while pending:
        kind = pending.pop()
        found.append(kind)
        pending.extend(kind.__subclasses__())
    return found


@pytest.mark.parametrize("kind", every_error_class(), ids=lambda kind: kind.__name__)
def test_every_core_error_has_a_status(kind: type[errors.TableQueueError]) -> None:
    status = status_of(kind("x"))
    if issubclass(kind, errors.DatabaseUnavailable):
        assert status == 503
    else:
        assert 400 <= status < 500


def test_subclasses_come_before_their_bases() -> None:
    """The first match wins: a base class above its subclass would hide the subclass's row."""
    kinds = [kind for kind, _ in STATUS_BY_ERROR]
    for position, kind in enumerate(kinds):
        assert not any(issubclass(later, kind) for later in kinds[position + 1 :]), kind


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (errors.QueueNotFound("x"), 404),
        (errors.MessageNotFound("x"), 404),
        (errors.Conflict("x"), 409),
        (errors.SchemaTooNew("x"), 409),
        (errors.DatabaseUnavailable("x"), 503),
        (errors.PredicateError("x"), 400),
        (errors.InvalidInput("x"), 400),
    ],
)
def test_statuses(error: errors.TableQueueError, status: int) -> None:
    assert status_of(error) == status
