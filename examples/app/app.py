"""An example app for the tablequeue worker sidecar: the HTTP handler beside it in the pod.

The worker POSTs each message to http://localhost:8080/process (the Queue's default
`workers.handler.http`) and takes a 2xx answer as success. This app:
- answers GET / (the worker's default app readiness check) once it listens;
- sleeps `sleepSeconds` of the message body, if given (a handler that takes time);
- fails a message whose body has `"fail": true` (500 with `"retry": false`: straight to Error);
- appends `messageId<TAB>pod<TAB>attempts` to RECORDS_DIR/<pod>.tsv for every message it
  processed, if RECORDS_DIR is set (what the tests count to prove "exactly once");
- starts listening only after START_DELAY_SECONDS (default 0): an app slow to start.

Standard library only: `python3 app.py`.
"""

from __future__ import annotations

import json
import os
import socket
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

POD = socket.gethostname()
RECORDS = Path(os.environ["RECORDS_DIR"]) / f"{POD}.tsv" if os.environ.get("RECORDS_DIR") else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._answer(200, {"status": "ok", "pod": POD})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        delivery = json.loads(self.rfile.read(length) or b"{}")
        body = delivery.get("message") or {}
        if isinstance(body, dict) and body.get("sleepSeconds"):
            time.sleep(float(body["sleepSeconds"]))
        if isinstance(body, dict) and body.get("fail"):
            self._answer(500, {"error": "asked to fail", "retry": False})
            return
        if RECORDS is not None:
            line = f"{delivery.get('messageId')}\t{POD}\t{delivery.get('attempts')}\n"
            with RECORDS.open("a") as records:  # one small append: whole lines, never mixed
                records.write(line)
        self._answer(200, {"result": {"pod": POD}})

    def _answer(self, status: int, data: object) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass  # one line per message would drown the pod's log


if __name__ == "__main__":
    time.sleep(float(os.environ.get("START_DELAY_SECONDS", "0")))
    server = ThreadingHTTPServer(("", int(os.environ.get("PORT", "8080"))), Handler)
    server.daemon_threads = True
    print(f"listening on :{server.server_port}", flush=True)
    server.serve_forever()
