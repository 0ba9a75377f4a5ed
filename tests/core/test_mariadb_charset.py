"""MariaDB connections speak utf8mb4 through both drivers (PyMySQL and MariaDB's ODBC driver),
whatever the server's default: JSON is stored as written, so a character outside the BMP (an
emoji, four bytes in UTF-8) must travel whole in both directions."""

from __future__ import annotations

import pytest

from tablequeue import connect
from tablequeue.spec import QueueResource


@pytest.mark.parametrize("url_fixture", ["mariadb_url", "mariadb_odbc_url"])
def test_the_connection_character_set_is_utf8mb4(
    url_fixture: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(url_fixture)
    with connect(url) as database:
        args = database.dialect.connect_args(database.url, 10.0, 300.0)
        assert args.get("charset", args.get("CHARSET")) == "utf8mb4"
        with database.transaction() as connection:
            variables = connection.exec_driver_sql(
                "SELECT @@character_set_client, @@character_set_connection, @@character_set_results"
            ).one()
        assert tuple(variables) == ("utf8mb4", "utf8mb4", "utf8mb4")
        database.apply(QueueResource.from_name("orders"))
        queue = database.queue("orders")
        queue.enqueue({"Emoji": "🐘🎉", "Name": "Jürgen"})
        with database.transaction() as connection:
            text = connection.exec_driver_sql("SELECT message FROM orders").scalar_one()
            length = connection.exec_driver_sql("SELECT CHAR_LENGTH(message) FROM orders")
            assert length.scalar_one() == len(text)
        assert text == '{"Emoji":"🐘🎉","Name":"Jürgen"}'


def test_a_charset_in_the_url_is_kept(mariadb_url: str) -> None:
    with connect(mariadb_url + "?charset=utf8mb4") as database:
        assert "charset" not in database.dialect.connect_args(database.url, 10.0, 300.0)
