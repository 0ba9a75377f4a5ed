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

from tablequeue import Database, Queue, predicate
from tablequeue.dialects.json_index import PREFIX
from tablequeue.dialects.mariadb.json_index import MARIADB_KEY_BYTES
from tablequeue.dialects.mariadb.json_paths import MARIADB_PATH_STEPS
from tablequeue.errors import InvalidInput, SpecError
from tablequeue.indexes import resolve
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
        ({"path": "a\n"}, "invalid index path"),  # `$` would match before the newline
        ({"path": '["a\n"]'}, "invalid index path"),
        ({"path": '["a\\"b"]'}, "invalid index path"),
        ({"path": '["a\\\\b"]'}, "invalid index path"),
        ({"path": '["a\'b"]'}, "invalid index path"),
        ({"path": "['a']"}, "invalid index path"),
        ({"path": '["\\u00e9"]'}, "invalid index path"),  # an escape of a non-ASCII key
        ({"path": '["é"]'}, "invalid index path"),
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
    condition = selection(queue._queue, where=where)
    assert condition is not None
    statement = sa.select(table.c.id).where(condition)
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
    from tablequeue.dialects.postgresql.json_index import _DDL_LOCK
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


ODD_KEYS = ["$", "a$b", "x:y", "@t", "a/b", "a+b", "a b.c", "1st", "_-"]


def test_every_key_an_index_accepts_is_indexed_and_selects_the_same_rows(
    make_queue: Callable[..., Queue],
) -> None:
    """Quoted keys are written into the index expressions as literals: each character the
    validation lets through works on every engine, and predicates select the same rows."""
    indexes = [{"path": f'["{key}"]'} for key in ODD_KEYS]
    plain = make_queue("plain", keep_processed_for="forever")
    indexed = make_queue("indexed", keep_processed_for="forever", indexes=indexes)
    bodies = [{key: f"{key}-{n}" for key in ODD_KEYS} for n in range(3)] + [{"$": 1}, {}]
    for queue in (plain, indexed):
        queue.enqueue_many([NewMessage(message=body) for body in bodies])
    for key in ODD_KEYS:
        for where in (f'["{key}"] == "{key}-1"', f'["{key}"] >= "{key}-1"'):
            expected = [m.message for m in plain.messages(where=where, limit=100)]
            assert [m.message for m in indexed.messages(where=where, limit=100)] == expected
            assert len(expected) == (1 if "==" in where else 2), where


# --- MariaDB: what the most and the longest declarations need --------------------------------


def _longest_paths(tag: str) -> list[str]:
    """16 paths of 200 characters, each heavy in its own way: the most steps MariaDB reads
    (indexes or names, each name quoted in its JSON path), the longest keys."""
    shapes = [
        lambda n: f"{tag}{n:02d}" + "i" * 17 + "[1000]" * 30,
        lambda n: f"{tag}{n:02d}" + "n" * 17 + ".bbbbb" * 30,
        lambda n: "".join(
            f'["{tag}{n:02d}{i}' + "k" * (56 if i == 2 else 60) + '"]' for i in range(3)
        ),
        lambda n: f'["{tag}{n:02d}' + "k" * 61 + '"]' + "[9999]" * 22,
    ]
    paths = [shapes[n % 4](n) for n in range(16)]
    assert {len(path) for path in paths} == {200}
    assert max(len(predicate.parse_path(path)) for path in paths) == MARIADB_PATH_STEPS
    return paths


_TQX_COLUMNS = sa.text(
    "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE()"
    " AND table_name = :table AND LEFT(column_name, 4) = 'tqx_'"
)
_TQX_INDEXES = sa.text(
    "SELECT index_name FROM information_schema.statistics WHERE table_schema = DATABASE()"
    " AND table_name = :table AND LEFT(index_name, 4) = 'tqx_'"
)


def _tqx_objects(database: Database, table: str) -> tuple[set[str], set[str]]:
    """The `tqx_` columns and indexes of the table, as information_schema lists them."""
    with database.transaction() as connection:
        columns, indexes = (
            {str(name) for (name,) in connection.execute(query, {"table": table})}
            for query in (_TQX_COLUMNS, _TQX_INDEXES)
        )
    return columns, indexes


def _index_names(paths: list[str], kind: str = "text") -> set[str]:
    resource = QueueResource.from_name("orders", indexes=[{"path": p, "type": kind} for p in paths])
    return {index.name for index in resolve("orders", resource.spec.indexes)}


def test_the_most_indexes_on_the_longest_paths_fit_and_replace_each_other_on_mariadb(
    mariadb_url: str,
) -> None:
    """16 text indexes on 200-character paths, then 16 others in their place: while apply
    replaces them, 32 generated columns are there at once (MariaDB counts them in a row's
    65,535 bytes and their expressions in a table definition's 64 KiB)."""
    from tablequeue import connect

    first, second = _longest_paths("a"), _longest_paths("b")
    with connect(mariadb_url) as database:
        for paths, outcome in ((first, "created"), (second, "updated")):
            declared = [{"path": path} for path in paths]
            resource = QueueResource.from_name("orders", indexes=declared)
            assert database.apply(resource) == outcome
            wanted = _index_names(paths)
            assert len(wanted) == 16
            assert _tqx_objects(database, "orders") == (wanted, wanted)
        assert database.apply(resource) == "unchanged"
        queue = database.queue("orders")
        path = second[2]  # three long keys: a body to find
        body: Any = "found"
        for key in reversed(predicate.parse_path(path)):
            body = {key: body}
        queue.enqueue_many([NewMessage(message=body), NewMessage(message={"other": 1})])
        assert queue.count(where=f'{path} == "found"') == 1
        assert queue.count(where=f'{path} >= "f"') == 1
        numbers = [{"path": path, "type": "number"} for path in second]
        assert database.apply(QueueResource.from_name("orders", indexes=numbers)) == "updated"
        assert _tqx_objects(database, "orders") == (_index_names(second, "number"),) * 2


def test_a_path_longer_than_mariadb_reads_is_refused_before_anything_is_made(
    mariadb_url: str,
) -> None:
    """MariaDB reads JSON paths of at most 31 steps: an index on a longer one would fail every
    enqueue (the generated column's value is an error)."""
    from tablequeue import connect

    path = "a" + ".b" * MARIADB_PATH_STEPS
    refused = f"32 steps, and mariadb reads JSON paths of at most {MARIADB_PATH_STEPS}"
    with connect(mariadb_url) as database:
        with pytest.raises(InvalidInput, match=refused):
            database.apply(QueueResource.from_name("deep", indexes=[{"path": path}]))
        assert not sa.inspect(database.engine).has_table("deep")
        assert database.queues() == []


def test_an_index_apply_that_fails_midway_leaves_nothing_behind_on_mariadb(
    mariadb_url: str,
) -> None:
    """MariaDB's DDL commits at once: when the third index cannot be made (a table holds at
    most 64 indexes, and a DBA's own left room for two), apply drops the two it made."""
    from tablequeue import connect

    with connect(mariadb_url) as database:
        database.apply(QueueResource.from_name("orders"))
        with database.transaction() as connection:
            keys = connection.execute(
                sa.text(
                    "SELECT count(DISTINCT index_name) FROM information_schema.statistics"
                    " WHERE table_schema = DATABASE() AND table_name = 'orders'"
                )
            ).scalar_one()
            own = ", ".join(f"ADD INDEX dba_{n} (created_at)" for n in range(64 - keys - 2))
            connection.exec_driver_sql(f"ALTER TABLE orders {own}")
        declared = QueueResource.from_name("orders", indexes=INDEXES[:4])
        with pytest.raises(sa.exc.OperationalError, match="Too many keys"):
            database.apply(declared)
        assert _tqx_objects(database, "orders") == (set(), set())
        [row] = database.queues()
        assert "indexes" not in row["settings"]
        with database.transaction() as connection:
            dropped = ", ".join(f"DROP INDEX dba_{n}" for n in range(64 - keys - 2))
            connection.exec_driver_sql(f"ALTER TABLE orders {dropped}")
        assert database.apply(declared) == "updated"
        assert len(_own_indexes(database, "orders")) == 4
