"""Bodies as written, in plain SQL: non-ASCII text, emoji outside the BMP, quotes, backslashes
and control characters are stored so that a plain SELECT of the body column shows them (only
what JSON must escape is escaped), predicates and JSON indexes find them, an idempotent queue
still recognises a row written escaped by an older tablequeue as the same body, and `apply`
rewrites such rows (schema version 5), batch by batch, idempotently.

Part of the conformance suite: every test runs on every engine (`db_url`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa

from tablequeue import Completion, Database, NewMessage
from tablequeue.dialects import Capabilities
from tablequeue.models import escaped_json
from tablequeue.spec import QueueResource
from tablequeue.storage import readable_json
from tablequeue.storage.schema import SCHEMA_VERSION

from .helpers import MakeQueue

BODY: dict[str, Any] = {
    "Name": "Jürgen Müller",
    "City": "Zürich - Ελλάδα - 東京",
    "Emoji": "🎉😀",
    "Quote": 'say "hi" \\ back / forth',
    "Control": "tab\tnew\nline\u0001end",
    "Ünïcode key": "x",
}
READABLE = ("Jürgen Müller", "Zürich - Ελλάδα - 東京", "🎉😀", "Ünïcode key")


def plain_select(database: Database, capabilities: Capabilities, column: str = "message") -> str:
    """The column as a plain SELECT shows it (PostgreSQL's jsonb, as text)."""
    shown = column if capabilities.stores_json_text else f"CAST({column} AS TEXT)"
    with database.transaction() as connection:
        [text] = connection.exec_driver_sql(f"SELECT {shown} FROM orders").scalars().all()  # noqa: S608
    assert isinstance(text, str)
    return text


def make_old(database: Database, table: str = "orders") -> None:
    """Turn the rows into what tablequeue wrote before schema version 5: every JSON value
    escaped (where JSON is stored as text), and the registry's schema version 4."""
    columns = readable_json.JSON_COLUMNS
    with database.transaction() as connection:
        connection.execute(sa.text("UPDATE tablequeue_queues SET schema_version = 4"))
        if not database.dialect.capabilities.stores_json_text:
            return
        listed = ", ".join(columns)
        rows = connection.exec_driver_sql(f"SELECT id, {listed} FROM {table}").all()  # noqa: S608
        for row in rows:
            for name, value in zip(columns, row[1:], strict=True):
                if value is not None:
                    old = escaped_json(json.loads(value))
                    connection.execute(
                        sa.text(f"UPDATE {table} SET {name} = :old WHERE id = :id"),  # noqa: S608
                        {"old": old, "id": row[0]},
                    )


def test_a_plain_select_shows_the_body_as_written(
    make_queue: MakeQueue, database: Database, capabilities: Capabilities
) -> None:
    queue = make_queue()
    result = queue.enqueue(BODY, headers={"From": "Bjørn 🐟"})
    assert queue.get(result.id or 0).message == BODY
    text = plain_select(database, capabilities)
    for written in READABLE:
        assert written in text
    assert json.loads(text) == BODY
    assert "\\u00fc" not in text and "\\ud83c" not in text  # ü and 🎉 are not escaped
    assert '\\"hi\\"' in text and "\\\\ back" in text  # what JSON must escape still is
    assert "\\t" in text and "\\n" in text and "\\u0001" in text
    assert "Bjørn 🐟" in plain_select(database, capabilities, "headers")


@pytest.mark.parametrize("indexed", [False, True], ids=["scan", "json-index"])
def test_predicates_find_every_kind_of_text(make_queue: MakeQueue, indexed: bool) -> None:
    paths = ["Name", "City", "Emoji", "Quote", "Control"]
    queue = make_queue(indexes=[{"path": path} for path in paths] if indexed else [])
    [wanted] = [queue.enqueue(BODY).id]
    queue.enqueue({key: value + "!" for key, value in BODY.items()})
    for key, value in BODY.items():
        path = key if key.isascii() and " " not in key else f"[{json.dumps(key)}]"
        where = f"{path} == {json.dumps(value, ensure_ascii=False)}"
        assert [m.id for m in queue.messages(where=where)] == [wanted], where
    assert [m.id for m in queue.messages(where='["Ünïcode key"] == "x"')] == [wanted]


def test_an_idempotent_queue_recognises_a_body_stored_escaped(
    make_queue: MakeQueue, database: Database, capabilities: Capabilities
) -> None:
    queue = make_queue(idempotent=True)
    first = queue.enqueue(BODY, message_id="A-1")
    ascii_only = queue.enqueue({"n": 1}, message_id="A-2")
    make_old(database)
    if capabilities.stores_json_text:
        assert "M\\u00fcller" in plain_select_of(database, "A-1", capabilities)

    again = queue.enqueue_many(
        [NewMessage(message=BODY, message_id="A-1"), NewMessage(message={"n": 1}, message_id="A-2")]
    )
    assert [r.outcome for r in again] == ["discarded", "discarded"]
    assert queue.get(first.id or 0).version == 1 and queue.get(ascii_only.id or 0).version == 1
    assert "Jürgen Müller" in plain_select_of(database, "A-1", capabilities)
    changed = queue.enqueue(BODY | {"Name": "Jürgen Müller-Lüdenscheidt"}, message_id="A-1")
    assert (changed.outcome, changed.version) == ("updated", 2)


def plain_select_of(database: Database, message_id: str, capabilities: Capabilities) -> str:
    shown = "message" if capabilities.stores_json_text else "CAST(message AS TEXT)"
    with database.transaction() as connection:
        text = connection.execute(
            sa.text(f"SELECT {shown} FROM orders WHERE message_id = :id"),  # noqa: S608
            {"id": message_id},
        ).scalar_one()
    assert isinstance(text, str)
    return text


def test_apply_rewrites_escaped_rows_once(
    make_queue: MakeQueue, database: Database, capabilities: Capabilities
) -> None:
    queue = make_queue(keep_processed_for="forever")
    bodies = [BODY | {"n": n} for n in range(5)] + [{"plain": "ascii"}]
    ids = [r.id for r in queue.enqueue_many([NewMessage(message=b) for b in bodies])]
    [done] = queue.lease("w1", 1).messages
    queue.complete("w1", [Completion(done, result={"Größe": "🐘"})])
    make_old(database)
    with database.transaction() as connection:  # written by hand, not tablequeue's old form
        connection.execute(
            sa.text("UPDATE orders SET headers = :h WHERE id = :id"),
            {"h": '{"a": "\\u00e9"}', "id": ids[-1]},
        )

    assert database.apply(QueueResource.from_name("orders", keep_processed_for="forever")) in (
        "updated",
        "unchanged",
    )
    assert database.queues()[0]["schema_version"] == SCHEMA_VERSION
    with database.transaction() as connection:
        texts = [
            row[0]
            for row in connection.exec_driver_sql(
                "SELECT message FROM orders ORDER BY id"
                if capabilities.stores_json_text
                else "SELECT CAST(message AS TEXT) FROM orders ORDER BY id"
            )
        ]
    assert all("Jürgen Müller" in text for text in texts[:5])
    assert [json.loads(text) for text in texts] == bodies
    assert queue.get(done.id).result == {"Größe": "🐘"}
    assert queue.get(ids[-1] or 0).headers == {"a": "é"}
    assert [m.id for m in queue.messages(where='["Ünïcode key"] == "x"')] == ids[:5]
    if capabilities.stores_json_text:
        with database.transaction() as connection:
            by_hand = connection.execute(
                sa.text("SELECT headers FROM orders WHERE id = :id"), {"id": ids[-1]}
            ).scalar_one()
        assert by_hand == '{"a": "\\u00e9"}'  # left as its writer wrote it

    table = database.table("orders")
    assert readable_json.rewrite_table(database, table) == 0  # idempotent: nothing left
    make_old(database)  # now the headers too are tablequeue's old form
    expected = 5 + 1 + 1 if capabilities.stores_json_text else 0  # bodies, result, headers
    assert readable_json.rewrite_table(database, table, batch_rows=2) == expected
    assert readable_json.rewrite_table(database, table, batch_rows=2) == 0


def test_an_unpaired_surrogate_stays_escaped(
    make_queue: MakeQueue, database: Database, capabilities: Capabilities
) -> None:
    queue = make_queue()
    queue.enqueue({"n": 1})
    written = '{"broken":"\\ud800","name":"J\\u00fcrgen"}'  # from before surrogates were refused
    if capabilities.stores_json_text:
        try:
            with database.transaction() as connection:
                connection.execute(sa.text("UPDATE orders SET message = :m"), {"m": written})
        except sa.exc.DBAPIError:
            pytest.skip("this engine's JSON check refuses an unpaired surrogate (MariaDB)")
    assert readable_json.rewrite_table(database, database.table("orders")) == 0
    if capabilities.stores_json_text:
        assert plain_select(database, capabilities) == written
    [message] = queue.lease("w", batch_size=1).messages
    if capabilities.stores_json_text:  # read as `json` reads it
        assert message.message == {"broken": "\ud800", "name": "Jürgen"}


def test_integers_beyond_64_bits_come_back_exactly(
    make_queue: MakeQueue, database: Database
) -> None:
    """Bodies are read back with orjson, which would read integers beyond 64 bits as floats:
    such a body is read by `json` instead, digit for digit."""
    queue = make_queue()
    body = {"big": 2**70 + 1, "negative": -(2**65), "small": 7, "name": "Jürgen"}
    queue.enqueue(body)
    [message] = queue.lease("w", batch_size=1).messages
    assert message.message == body
    queue.settle("w", [Completion(message, result={"total": 10**30})])
    assert database.find_job(str(message.tracking_id)).result == {"total": 10**30}
