"""`spec.indexes`: indexes on JSON body paths, made and dropped by apply, used by predicates.

Every engine: a predicate selects the same rows with and without the queue's indexes (the
index only narrows what is read), apply creates the declared indexes and drops only its own.
PostgreSQL, SQLite and MariaDB: EXPLAIN of the statement a predicate runs shows the index.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from tablequeue import Database, Queue
from tablequeue.dialects.json_index import MARIADB_KEY_BYTES, PREFIX
from tablequeue.errors import SpecError
from tablequeue.models import NewMessage
from tablequeue.queue.read import selection
from tablequeue.spec import QueueResource

INDEXES = [
    {"path": "OrderId"},
    {"path": "Product.Sku"},
    {"path": "Qty", "type": "number"},
    {"path": "Paid", "type": "boolean"},
    {"path": 'Items[0]["unit price"]', "type": "number"},
]
LONG = "é" * (MARIADB_KEY_BYTES // 2 + 10)  # longer than MariaDB's key: indexed by a prefix


def bodies() -> list[Any]:
    out: list[Any] = []
    for n in range(60):
        out.append(
            {
                "OrderId": f"A-{n}",
                "Product": {"Sku": str(n % 7)},
                "Qty": n % 5 if n % 3 else (n % 5) + 0.5,
                "Paid": n % 2 == 0,
                "Items": [{"unit price": n * 1.25}],
            }
        )
    out += [
        {"OrderId": 17, "Qty": "3", "Paid": "true", "Product": "Sku"},  # wrong kinds
        {"OrderId": None, "Qty": None, "Product": {"Sku": None}},
        {"OrderId": LONG, "Qty": 2**53 + 1, "Product": {"Sku": LONG + "x"}},
        {"OrderId": LONG + "a", "Qty": -1e300, "Items": {"0": {"unit price": 3}}},
        {"OrderId": "a-5", "Qty": 3.0, "Product": {"Sku": ["1"]}, "Items": []},
        {"OrderId": "A-5 ", "Paid": False, "Product": {"Sku": "ÿ"}},
        {},
        [1, 2],
        "text",
    ]
    return out


PREDICATES = [
    'OrderId == "A-5"',
    'OrderId != "A-5"',
    'OrderId > "A-5"',
    'OrderId <= "A-5"',
    f'OrderId == "{LONG}"',
    f'OrderId >= "{LONG}"',
    f'OrderId < "{LONG}a"',
    'Product.Sku == "3"',
    'Product.Sku == "3" and Qty >= 2',
    'Product.Sku == "3" or Paid == true',
    'not Product.Sku == "3"',
    'not (OrderId == "A-5" or Qty > 3)',
    "Qty == 3",
    "Qty == 3.5",
    "Qty > 2",
    "Qty < 2.5",
    "Qty >= 9007199254740993",
    "Qty <= -1e300",
    "Paid == true",
    'Paid == false and OrderId >= "A-3"',
    'Items[0]["unit price"] > 30',
    'Items[0]["unit price"] == 2.5',
    "OrderId == null",
    "Qty == 17",
    "OrderId == 17",
]


def fill(queue: Queue) -> None:
    queue.enqueue_many([NewMessage(message=body) for body in bodies()])


def test_predicates_select_the_same_rows_with_and_without_indexes(
    make_queue: Callable[..., Queue],
) -> None:
    plain = make_queue("plain", keep_processed_for="forever")
    indexed = make_queue("indexed", keep_processed_for="forever", indexes=INDEXES)
    fill(plain)
    fill(indexed)
    for where in PREDICATES:
        expected = [m.message for m in plain.messages(where=where, limit=1000)]
        got = [m.message for m in indexed.messages(where=where, limit=1000)]
        assert got == expected, where
        assert indexed.count(where=where) == len(expected), where
    assert indexed.count(where='OrderId == "A-5"') == 1


def _own_indexes(database: Database, table: str) -> set[str]:
    strategy = database.dialect.json_indexes
    with database.transaction() as connection:
        return set(strategy.existing(connection, table))


def test_apply_creates_declared_indexes_and_drops_only_its_own(
    database: Database, make_queue: Callable[..., Queue]
) -> None:
    queue = make_queue("orders", indexes=INDEXES[:3])
    made = _own_indexes(database, "orders")
    assert len(made) == 3 and all(name.startswith(PREFIX) for name in made)
    quote = database.engine.dialect.identifier_preparer.quote
    with database.transaction() as connection:  # a DBA's own index stays
        connection.exec_driver_sql(
            f"CREATE INDEX {quote('orders_by_created')} ON orders (created_at)"
        )
    resource = QueueResource.from_name("orders", indexes=INDEXES[:3])
    assert database.apply(resource) == "unchanged"
    assert database.apply(QueueResource.from_name("orders", indexes=INDEXES[1:2])) == "updated"
    left = _own_indexes(database, "orders")
    assert len(left) == 1 and left < made
    with database.transaction() as connection, warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.exc.SAWarning)  # SQLite's expression indexes
        names = {i["name"] for i in sa.inspect(connection).get_indexes("orders")}
    assert "orders_by_created" in names
    queue.enqueue({"Product": {"Sku": "9"}})
    assert database.queue("orders").count(where='Product.Sku == "9"') == 1
    assert database.apply(QueueResource.from_name("orders")) == "updated"
    assert _own_indexes(database, "orders") == set()
    # The table stays a queue table for apply and its migrations.
    assert database.apply(QueueResource.from_name("orders", indexes=INDEXES)) == "updated"
    assert database.apply(QueueResource.from_name("orders", indexes=INDEXES)) == "unchanged"


@pytest.mark.parametrize(
    ("index", "problem"),
    [
        ({"path": "a or b"}, "invalid index path 'a or b': write it as predicates do"),
        ({"path": 'x["50%"]'}, "quoted keys may hold letters"),
        ({"path": '["-1"]'}, "not first"),
        ({"path": "not"}, "'not' is a keyword"),
        ({"path": "a[99999999999]"}, "invalid index path"),
        ({"path": "a", "type": "date"}, "indexes.0.type"),
        ({"path": "a", "name": "x"}, "unknown field"),
    ],
)
def test_bad_index_specs_are_refused_with_the_problem(index: dict[str, str], problem: str) -> None:
    with pytest.raises(SpecError, match=problem):
        QueueResource.from_name("orders", indexes=[index])


def test_an_index_declared_twice_is_refused() -> None:
    with pytest.raises(SpecError, match="declared twice"):
        QueueResource.from_name("orders", indexes=[{"path": "a.b"}, {"path": 'a["b"]'}])


# --- EXPLAIN: the statement a predicate runs reads the index ---------------------------------

EXPLAINED = {"postgresql": "postgres_url", "sqlite": "sqlite_url", "mariadb": "mariadb_url"}
NARROWED = {"postgresql": "Index Cond", "sqlite": "SEARCH", "mariadb": " ref "}
"""How each engine's plan says that an index was searched (not scanned whole)."""
ANALYZE = {"postgresql": "ANALYZE orders", "sqlite": "ANALYZE", "mariadb": "ANALYZE TABLE orders"}


def _explain(database: Database, queue: Queue, where: str) -> str:
    table = queue.table
    statement = sa.select(table.c.id).where(selection(queue._queue, where=where))
    sql_dialect = database.engine.dialect
    compiled = statement.compile(dialect=sql_dialect, compile_kwargs={"render_postcompile": True})
    params: Any = compiled.params
    if compiled.positiontup is not None:
        params = tuple(compiled.params[name] for name in compiled.positiontup)
    prefix = {"sqlite": "EXPLAIN QUERY PLAN ", "postgresql": "EXPLAIN "}.get(
        sql_dialect.name, "EXPLAIN "
    )
    with database.transaction() as connection:
        rows = connection.exec_driver_sql(prefix + str(compiled), params).all()
    return "\n".join(" ".join(str(cell) for cell in row) for row in rows)


@pytest.mark.parametrize("engine", list(EXPLAINED))
def test_explain_shows_the_index_for_a_predicate_on_an_indexed_path(
    engine: str, request: pytest.FixtureRequest
) -> None:
    url = str(request.getfixturevalue(EXPLAINED[engine]))
    from tablequeue import connect

    with connect(url) as database:
        database.apply(
            QueueResource.from_name(
                "orders",
                keep_processed_for="forever",
                indexes=[{"path": "OrderId"}, {"path": "Qty", "type": "number"}],
            )
        )
        queue = database.queue("orders")
        queue.enqueue_many(
            [NewMessage(message={"OrderId": f"A-{n}", "Qty": n % 50}) for n in range(3000)]
        )
        with database.transaction() as connection:
            connection.exec_driver_sql(ANALYZE[engine])
        names = sorted(_own_indexes(database, "orders"))
        order_id = next(n for n in names if "orderid" in n)
        qty = next(n for n in names if "qty" in n)
        for where, index in (
            ('OrderId == "A-17"', order_id),
            ('Qty == 7 and OrderId != "x"', qty),
            ('OrderId == "none"', order_id),
        ):
            plan = _explain(database, queue, where)
            assert index in plan and NARROWED[engine] in plan, f"{where}:\n{plan}"
        plain = _explain(database, queue, 'not OrderId == "A-17"')
        assert order_id not in plain


def test_indexed_paths_accept_any_body(make_queue: Callable[..., Queue]) -> None:
    """An index never refuses a message: huge numbers, long and odd text, wrong kinds."""
    queue = make_queue("orders", indexes=INDEXES)
    queue.enqueue({"Qty": 10**400, "OrderId": "x" * 3900, "Paid": {"a": 1}})
    queue.enqueue({"Qty": -(10**400), "Items": [{"unit price": 1e308}]})
    assert queue.count(where="Qty > 5") == 1
    assert queue.count(where=f'OrderId == "{"x" * 3900}"') == 1
    assert queue.count(where=f'OrderId > "{"x" * 3899}"') == 1


def test_an_invalid_index_left_by_a_failed_build_is_rebuilt(postgres_url: str) -> None:
    from tablequeue import connect

    with connect(postgres_url) as database:
        resource = QueueResource.from_name("orders", indexes=INDEXES[:1])
        database.apply(resource)
        [name] = _own_indexes(database, "orders")
        with database.transaction() as connection:  # what an interrupted CONCURRENTLY leaves
            connection.exec_driver_sql(
                "UPDATE pg_index SET indisvalid = false"
                " WHERE indexrelid = CAST(%(name)s AS regclass)",
                {"name": name},
            )
        strategy = database.dialect.json_indexes
        with database.transaction() as connection:
            assert strategy.existing(connection, "orders") == {name: False}
        assert database.apply(resource) == "updated"
        with database.transaction() as connection:
            assert strategy.existing(connection, "orders") == {name: True}


def test_one_apply_builds_postgresql_indexes_at_a_time(postgres_url: str) -> None:
    from tablequeue import connect
    from tablequeue.dialects.json_index import _DDL_LOCK
    from tablequeue.errors import IndexBuildBusy

    with connect(postgres_url) as database, database.engine.connect() as other:
        other.execute(sa.text("SELECT pg_advisory_lock(:key)").bindparams(key=_DDL_LOCK))
        other.commit()
        resource = QueueResource.from_name("orders", indexes=INDEXES[:1])
        with pytest.raises(IndexBuildBusy, match="another apply is building indexes"):
            database.apply(resource, index_wait_seconds=0)
        assert _own_indexes(database, "orders") == set()  # the table is there, not the index
        other.execute(sa.text("SELECT pg_advisory_unlock(:key)").bindparams(key=_DDL_LOCK))
        other.commit()
        assert database.apply(resource, index_wait_seconds=0) == "updated"
        assert len(_own_indexes(database, "orders")) == 1
