"""What the admin UI does to the rows a person ticked, and how it finds a message anywhere:
delete and cancel by ids, find by message id or tracking id across queues.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

import pytest

from tablequeue import Completion, Database
from tablequeue.errors import InvalidInput

from .helpers import MakeQueue, statuses


def test_delete_many_leaves_leased_and_unchosen_messages(make_queue: MakeQueue) -> None:
    queue = make_queue()
    leased, a, b, kept = (queue.enqueue({"n": n}).id or 0 for n in range(4))
    assert [m.id for m in queue.lease("w1", 1).messages] == [leased]
    assert queue.delete_many([leased, a, b]) == 2
    assert statuses(queue) == {leased: "Leased", kept: "Pending"}
    assert queue.delete_many([a, b]) == 0  # gone already: nothing, and no error
    assert queue.delete_many([leased], force=True) == 1
    assert statuses(queue) == {kept: "Pending"}
    with pytest.raises(InvalidInput, match="no message ids given"):
        queue.delete_many([])
    with pytest.raises(InvalidInput, match="whole numbers from 1"):
        queue.delete_many([0])


def test_cancel_many_cancels_unfinished_messages_only(make_queue: MakeQueue) -> None:
    queue = make_queue(keep_processed_for="forever")
    done, running, waiting, held, other = (queue.enqueue({"n": n}).id or 0 for n in range(5))
    first, second = queue.lease("w1", 2).messages
    assert (first.id, second.id) == (done, running)
    queue.complete("w1", [Completion(first)])
    queue.set_status("OnHold", ids=[held])
    assert queue.cancel_many([done, running, waiting, held]) == 3
    assert statuses(queue) == {
        done: "Processed",
        running: "Cancelled",
        waiting: "Cancelled",
        held: "Cancelled",
        other: "Pending",
    }
    assert queue.extend("w1", [running]) == set()  # its handler learns it is cancelled
    assert queue.get(running).lease_expires_at is None


def test_find_messages_by_message_id_or_tracking_id(
    database: Database, make_queue: MakeQueue
) -> None:
    orders, invoices = make_queue("orders"), make_queue("invoices")
    in_orders = orders.enqueue({"n": 1}, message_id="A-1001")
    in_invoices = invoices.enqueue({"n": 2}, message_id="A-1001")
    alone = invoices.enqueue({"n": 3}, message_id="'; DROP TABLE orders; --")
    orders.enqueue({"n": 4})

    found = {(name, m.id) for name, m in database.find_messages(" A-1001 ")}
    assert found == {("orders", in_orders.id), ("invoices", in_invoices.id)}
    [(name, message)] = database.find_messages(str(in_orders.tracking_id))
    assert (name, message.id) == ("orders", in_orders.id)
    [(name, message)] = database.find_messages("'; DROP TABLE orders; --")
    assert (name, message.id) == ("invoices", alone.id)
    assert database.find_messages("A-9999") == []
    assert database.find_messages("00000000-0000-0000-0000-000000000000") == []
    assert len(database.find_messages("A-1001", limit=1)) == 1
    with pytest.raises(InvalidInput, match="tracking id or a message id"):
        database.find_messages("  ")
    assert orders.count() == 2  # the quoted key was a value, never SQL
