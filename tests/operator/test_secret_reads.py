"""An API server that cannot answer a Secret read now (429 Too Many Requests, 5xx) is a
condition with its reason, as a refused read is, not an exception kopf logs and retries unseen:
the real Kubernetes client against a loopback HTTP server answering as an overloaded API server
does (a Status body)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import kubernetes
import pytest

from tablequeue.operator.conditions import NotReady
from tablequeue.operator.kube import Kube


class _Overloaded(BaseHTTPRequestHandler):
    """Answers every request with the status its path's last part names (`.../secrets/503`)."""

    def do_GET(self) -> None:
        code = int(self.path.rsplit("/", 1)[-1])
        body = json.dumps(
            {"kind": "Status", "status": "Failure", "message": f"answered {code}", "code": code}
        ).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def kube() -> Iterator[Kube]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Overloaded)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    configuration = kubernetes.client.Configuration()
    configuration.host = f"http://127.0.0.1:{server.server_address[1]}"
    configuration.retries = 0
    client = Kube(kubernetes.client.ApiClient(configuration))
    yield client
    client.close()
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        *((code, "SecretUnavailable") for code in (429, 500, 503)),
        (403, "SecretRefused"),
        (404, "SecretNotFound"),
    ],
)
def test_a_secret_read_that_fails_is_a_condition(kube: Kube, code: int, reason: str) -> None:
    with pytest.raises(NotReady) as raised:
        kube.secret_value(str(code), "url", "tenant")
    problem = raised.value
    assert (problem.kind, problem.reason) == ("DatabaseReachable", reason)
    if reason != "SecretNotFound":
        assert problem.message.endswith(f": answered {code}"), problem.message
        assert f"secret '{code}'" in problem.message, problem.message
