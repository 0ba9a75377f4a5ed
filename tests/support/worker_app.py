"""A small real HTTP app for the worker's `http` handler, served from a thread of the test process.

It records every POSTed payload and answers as the message body says:
`{"status": 500, "text": "boom"}` answers 500 with that text, `{"status": 200, "json": {...}}`
answers with that JSON (content type application/json), `{"hex": "fffe"}` with those raw bytes;
the default is 200 with no body. While it handles a message, it reports each value of the body's
`"report"` list as progress to the worker (`POST` to the `Tablequeue-Progress-Url` header, as
`{"progress": value}`; a string is posted as the raw body), keeping the worker's answers, and
with `"hold": true` it answers only once the test sets `release`. It keeps the request headers.
A GET on any path answers 404: an HTTP server that listens, as the worker's app readiness check
sees it (any status below 500).

`python -m tests.support.worker_app PORT RECORDS_FILE` serves it as a process of its own (an app
container that starts late, is killed and restarts), appending each POSTed message's id to
RECORDS_FILE as one line.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class App:
    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.headers: dict[int, dict[str, str]] = {}
        """Request headers by message id (lowercase names)."""
        self.progress_answers: list[tuple[int, str]] = []
        """The worker's answers to progress reports: (status, text)."""
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.records: str | None = None
        """A file to append each POSTed message's id to (the app as a process of its own)."""

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/process"

    def payloads(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.received)


def _handler_class(app: App) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            payload = json.loads(self.rfile.read(length))
            with app.lock:
                app.received.append(payload)
                app.headers[payload["id"]] = {k.lower(): v for k, v in self.headers.items()}
                if app.records is not None:
                    with open(app.records, "a") as out:
                        out.write(f"{payload['id']}\n")
            body = payload.get("message") or {}
            if not isinstance(body, dict):
                body = {}
            for value in body.get("report", []):
                answer = report(self.headers["Tablequeue-Progress-Url"], value)
                with app.lock:
                    app.progress_answers.append(answer)
            if body.get("hold"):
                app.release.wait(60)
            status = int(body.get("status", 200))
            if "json" in body:
                data = json.dumps(body["json"]).encode()
                content_type = "application/json"
            elif "hex" in body:  # raw bytes, whatever the declared charset says
                data = bytes.fromhex(body["hex"])
                content_type = "text/plain; charset=utf-8"
            else:
                data = str(body.get("text", "")).encode()
                content_type = "text/plain; charset=utf-8"
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def report(url: str, value: Any) -> tuple[int, str]:
    """POST progress to the worker: (status, text)."""
    if isinstance(value, bytes | str):
        data = value if isinstance(value, bytes) else value.encode()
    else:
        data = json.dumps({"progress": value}).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()


@contextlib.contextmanager
def serve(port: int = 0, records: str | None = None) -> Iterator[App]:
    app = App()
    app.records = records
    app.server = ThreadingHTTPServer(("127.0.0.1", port), _handler_class(app))
    thread = threading.Thread(target=app.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield app
    finally:
        app.release.set()
        app.server.shutdown()
        app.server.server_close()


def read_ids(records: str) -> list[int]:
    """The message ids an app process was POSTed, in order (complete lines only)."""
    try:
        with open(records) as file:
            text = file.read()
    except FileNotFoundError:
        return []
    return [int(line) for line in text[: text.rfind("\n") + 1].splitlines()]


if __name__ == "__main__":
    with serve(int(sys.argv[1]), sys.argv[2]) as served:
        print("listening", flush=True)
        threading.Event().wait()  # until killed
