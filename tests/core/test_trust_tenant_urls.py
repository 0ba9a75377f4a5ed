"""Issue 44 (H1): a tenant's database URL, where it crosses a privilege boundary (the operator),
keeps only the parameters its engine's dialect names harmless, a host name and a connect
timeout no longer than the client's own (`tablequeue.tenant_url`). The rogue server shows what
the refused parameters would do: PyMySQL told `local_infile=1` hands it a file of the client's.
The operator's side, on the real control plane: tests/operator/test_trust_tenant_urls.py."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

import pytest
import sqlalchemy as sa

import tablequeue
from tablequeue import tenant_url
from tablequeue.errors import InvalidInput
from tests.support.rogue_servers import RogueMariaDb

PG = "postgresql://ann:pw@db.example:5432/app"
MARIA = "mariadb://ann:pw@db.example:3306/app"
MSSQL = "mssql+pyodbc://ann:pw@db.example:1433/app?driver=FreeTDS"

REFUSED_PARAMETERS = [
    (f"{MARIA}?local_infile=1", "'local_infile'"),
    (f"{MARIA}?read_default_file=/etc/passwd", "'read_default_file'"),
    (f"{MARIA}?read_default_group=client", "'read_default_group'"),
    (f"{MARIA}?ssl_key=/root/.kube/key.pem", "'ssl_key'"),
    (f"{MARIA}?ssl_ca=/var/run/secrets/ca.crt", "'ssl_ca'"),
    (f"{MARIA}?unix_socket=/run/mysqld.sock", "'unix_socket'"),
    (f"{MARIA}?init_command=SET+max_statement_time%3D0", "'init_command'"),
    (f"{MARIA}?read_timeout=600", "'read_timeout'"),
    (f"{PG}?sslkey=/root/.kube/key.pem", "'sslkey'"),
    (f"{PG}?sslcert=/root/.kube/cert.pem", "'sslcert'"),
    (f"{PG}?sslrootcert=/var/run/secrets/ca.crt", "'sslrootcert'"),
    (f"{PG}?sslcrl=/etc/crl.pem", "'sslcrl'"),
    (f"{PG}?passfile=/root/.pgpass", "'passfile'"),
    (f"{PG}?service=operator", "'service'"),
    (f"{PG}?host=/var/run/postgresql", "'host'"),
    (f"{PG}?options=-c+statement_timeout%3D0", "'options'"),
    (f"{PG}?tcp_user_timeout=0", "'tcp_user_timeout'"),
    (f"{PG}?gssencmode=require", "'gssencmode'"),
    (f"{MSSQL}&odbc_connect=DRIVER%3D%2Ftmp%2Fx.so", "'odbc_connect'"),
    (f"{MSSQL}&MARS_Connection=yes", "'MARS_Connection'"),
    ("sqlite:////data/queues.db?mode=ro", "'mode'"),
]


@pytest.mark.parametrize(("url", "named"), REFUSED_PARAMETERS)
def test_a_parameter_outside_the_engines_list_is_refused_by_name(url: str, named: str) -> None:
    with pytest.raises(InvalidInput, match="a Queue's URL may set") as refused:
        tenant_url(url)
    assert f"sets the parameter {named}" in str(refused.value)
    assert ":pw@" not in str(refused.value)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("postgresql://ann:pw@/app", "names no server host"),
        ("postgresql://ann:pw@%2Fvar%2Frun%2Fpostgresql/app", "names no server host"),
        ("mssql+pyodbc://ann:pw@operator-dsn", "names no ODBC driver"),
        ("mssql+pyodbc://ann:pw@h/app?driver=/tmp/evil.so", "names an ODBC driver by path"),
        ("mssql+pyodbc://ann:pw@h/app?driver=FreeTDS&encrypt=yes;DRIVER=/x.so", "';', '{'"),
        ("mssql+pyodbc://ann:p;DRIVER=/x.so@h/app?driver=FreeTDS", "';', '{'"),
        ("mariadb+pyodbc://ann:pw@h/app?driver={/x.so}", "';', '{'"),
        (f"{PG}?sslmode=require&sslmode=disable", "twice"),
        (f"{PG}?connect_timeout=never", "expected a positive number of seconds"),
        (f"{PG}?connect_timeout=-1", "expected a positive number of seconds"),
    ],
)
def test_hosts_that_are_not_servers_and_odbc_keys_of_its_own_are_refused(
    url: str, problem: str
) -> None:
    with pytest.raises(InvalidInput, match="the database URL") as refused:
        tenant_url(url)
    assert problem in str(refused.value)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"{PG}?connect_timeout=600&sslmode=require", f"{PG}?connect_timeout=10&sslmode=require"),
        (f"{PG}?connect_timeout=3", f"{PG}?connect_timeout=3"),
        (f"{PG}?pooler=transaction&application_name=shop", None),
        (
            f"{MARIA}?connect_timeout=600&charset=utf8mb4",
            f"{MARIA}?connect_timeout=10&charset=utf8mb4",
        ),
        (f"{MSSQL}&Timeout=900&Encrypt=yes", f"{MSSQL}&Timeout=10&Encrypt=yes"),
        ("postgresql://ann:p%40ss@db.example/app", None),
        ("sqlite:////data/queues.db", None),
    ],
)
def test_harmless_parameters_pass_and_the_connect_timeout_is_capped(
    url: str, expected: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TABLEQUEUE_DB_CONNECT_TIMEOUT", raising=False)
    assert sa.make_url(tenant_url(url)) == sa.make_url(expected or url)


def test_the_cap_is_the_processes_own_connect_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLEQUEUE_DB_CONNECT_TIMEOUT", "4")
    assert tenant_url(f"{PG}?connect_timeout=600") == f"{PG}?connect_timeout=4"


def test_the_rogue_server_gets_a_file_from_a_client_that_allows_it(tmp_path: Path) -> None:
    """What `local_infile=1` does where nothing refuses it (the CLI, run by the file's owner):
    the rogue server of the operator's test is real."""
    secret = tmp_path / "key.pem"
    secret.write_text("PRIVATE KEY MATERIAL")
    with RogueMariaDb(str(secret)) as rogue:
        # It answers no query as a server would: connecting fails, after the file has gone.
        with tablequeue.connect(rogue.url("?local_infile=1")) as db, suppress(Exception):
            db.queue("orders")
        assert rogue.received and rogue.received[0] == b"PRIVATE KEY MATERIAL"
        with pytest.raises(InvalidInput, match="'local_infile'"):
            tenant_url(rogue.url("?local_infile=1"))
