"""Issue 44 (H1, L3) on a real API server: a tenant's Secret whose URL asks the driver to read or
send the operator's files (`local_infile`, `read_default_file`, libpq's `sslkey`, `passfile`,
`service`, a socket path, an ODBC driver by path, ...) is refused by name before the operator
connects: a rogue MariaDB server that asks every client for the operator's kubeconfig gets no
connection, let alone the file, and the answer is the same whether the path exists or not. A
harmless URL still connects, with its connect timeout capped at the operator's own."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest

from tests.operator.conftest import wait
from tests.support.kube import ControlPlane
from tests.support.kube.fixtures import (
    Operator,
    apply,
    condition_is,
    conditions,
    queue,
    secret,
)
from tests.support.rogue_servers import RogueMariaDb, SilentServer

pytestmark = pytest.mark.timeout(300)


def silent_url(silent: SilentServer) -> str:
    return f"postgresql://tenant:pw@127.0.0.1:{silent.port}/tenant"


def refused_urls(rogue: RogueMariaDb, existing: Path, missing: Path) -> dict[str, tuple[str, str]]:
    """Queue name -> (URL, the parameter its refusal names)."""
    pg = f"postgresql://tenant:pw@127.0.0.1:{rogue.port}/tenant"
    odbc = f"mssql+pyodbc://tenant:pw@127.0.0.1:{rogue.port}/tenant"
    return {
        "local-infile": (rogue.url("?local_infile=1"), "'local_infile'"),
        "default-file": (rogue.url(f"?read_default_file={existing}"), "'read_default_file'"),
        "ssl-key": (rogue.url(f"?ssl_key={existing}"), "'ssl_key'"),
        "libpq-sslkey": (f"{pg}?sslkey={existing}", "'sslkey'"),
        "libpq-sslrootcert-there": (f"{pg}?sslrootcert={existing}", "'sslrootcert'"),
        "libpq-sslrootcert-gone": (f"{pg}?sslrootcert={missing}", "'sslrootcert'"),
        "libpq-passfile": (f"{pg}?passfile={existing}", "'passfile'"),
        "libpq-service": (f"{pg}?service=operator", "'service'"),
        "libpq-socket": (f"{pg}?host=/var/run/postgresql", "'host'"),
        "odbc-connect": (
            f"{odbc}?driver=FreeTDS&odbc_connect=DRIVER%3D{existing}",
            "'odbc_connect'",
        ),
        "odbc-driver-path": (f"{odbc}?driver={existing}", "an ODBC driver by path"),
    }


def test_a_url_that_would_read_the_operators_files_is_refused_before_connecting(
    kube: ControlPlane, namespace: str, operator: Operator, tmp_path: Path
) -> None:
    kubeconfig = operator.env["KUBECONFIG"]
    missing = tmp_path / "no-such-file.pem"
    with RogueMariaDb(kubeconfig) as rogue, SilentServer() as silent:
        urls = refused_urls(rogue, Path(kubeconfig), missing)
        apply(
            kube,
            *(secret(name, namespace, url) for name, (url, _) in urls.items()),
            *(queue(name, namespace, name) for name in urls),
            secret("harmless", namespace, f"{silent_url(silent)}?connect_timeout=600"),
            queue("harmless", namespace, "harmless"),
        )
        messages = {}
        for name, (_, named) in urls.items():
            refused = wait(
                condition_is(kube, name, namespace, "DatabaseReachable", "False", "URLRefused"),
                timeout=60,
            )
            message = conditions(refused)["DatabaseReachable"]["message"]
            assert named in message and "tenant:pw" not in message, message
            assert conditions(refused)["Ready"]["status"] == "False"
            messages[name] = message
        down = wait(
            condition_is(
                kube, "harmless", namespace, "DatabaseReachable", "False", "DatabaseUnavailable"
            ),
            timeout=60,
        )
        message = conditions(down)["DatabaseReachable"]["message"]
        assert "timeout expired" in message, message  # libpq's 10 s, not the handler's 60 s
        assert silent.connections >= 1
        assert rogue.connections == 0 and rogue.received == [], "a refused URL was connected to"
    # L3: whether the named file exists does not show.
    there = messages["libpq-sslrootcert-there"].replace(quote(kubeconfig, safe=""), "PATH")
    gone = messages["libpq-sslrootcert-gone"].replace(quote(str(missing), safe=""), "PATH")
    assert there == gone and "PATH" in there, there
    assert operator.alive and "tenant:pw" not in operator.log()
