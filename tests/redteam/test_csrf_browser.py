"""Cross-site request forgery (issue 29): a page on another origin of the same host (another port,
which browsers count as the same site, so the SameSite=Strict sign-in cookie goes along) tries to
pause a queue, cancel a message and change statuses through a signed-in browser, and through a
local UI without tokens. Real Chromium, two real HTTP servers; the database proves nothing moved,
and the same requests from the UI's own origin prove the refusal is the origin's doing."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tablequeue import Database, NewMessage, connect
from tablequeue.api.auth import Auth
from tablequeue.spec import QueueResource
from tests.api.test_ui_browser import CHROMIUM, CHROMIUM_ARGS, needs_browser
from tests.support.api_server import serve_api
from tests.support.snapshot import snapshot

ADMIN_TOKEN = "admin-secret"

ATTACK = """
async function attack(api, trackingId, asTheUi) {
  // What another page may send anywhere: simple requests, no preflight, the cookie goes along
  // (a JSON Content-Type is dropped in no-cors mode). The UI's own pages send JSON.
  const send = (path, body) => fetch(api + path, {
    method: "POST",
    credentials: "include",
    mode: asTheUi ? "same-origin" : "no-cors",
    headers: asTheUi ? {"Content-Type": "application/json"} : {},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await send("/queues/orders/pause");
  await send("/jobs/" + trackingId + "/cancel");
  await send("/queues/orders/status", {status: "Cancelled", fromStatus: "Pending"});
  const sink = document.createElement("iframe");  // the classic: a form posted into a frame
  sink.name = "sink";
  document.body.append(sink);
  const form = document.createElement("form");
  form.method = "POST"; form.action = api + "/queues/orders/pause"; form.target = "sink";
  document.body.append(form);
  form.submit();
}
"""


@contextlib.contextmanager
def attacker_site(html: str) -> Iterator[str]:
    """Another origin on the same host: a server on another loopback port serving one page."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(timeout=30)


def seeded(tmp_path: Path) -> tuple[Database, str]:
    database = connect(f"sqlite:///{tmp_path / 'queue.db'}")
    database.apply(QueueResource.from_name("orders"))
    queue = database.queue("orders")
    queue.enqueue_many([NewMessage(message={"n": n}) for n in range(3)])
    return database, str(queue.messages(status="Pending")[0].tracking_id)


@needs_browser
@pytest.mark.parametrize("tokens", [True, False], ids=["signed-in", "no-tokens"])
def test_another_origin_cannot_change_anything_through_the_browser(
    tmp_path: Path, page: Any, tokens: bool
) -> None:
    database, tracking_id = seeded(tmp_path)
    auth = Auth(admin_token=ADMIN_TOKEN) if tokens else Auth()
    with serve_api(database, auth) as api:
        if tokens:
            page.goto(f"{api}/ui/login")
            page.fill("input[name=token]", ADMIN_TOKEN)
            page.click("button.primary")
            page.wait_for_url(f"{api}/ui")
        before = snapshot(database)

        answers: list[tuple[str, int]] = []

        def answered(response: Any) -> None:
            if response.url.startswith(api):
                answers.append((response.request.method, response.status))

        page.on("response", answered)
        run_attack = f"attack({json.dumps(api)}, {json.dumps(tracking_id)}, false)"
        with attacker_site(f"<html><body><script>{ATTACK}</script></body></html>") as evil:
            page.goto(evil)
            with page.expect_response(lambda r: r.request.resource_type == "document"):
                page.evaluate(run_attack)  # the fetches first, then the form into its frame
        # The requests reached the API and were refused there, not lost on the way.
        assert answers == [("POST", 403)] * 4, answers
        assert snapshot(database) == before

        # The same requests from the UI's own origin work: the refusal was the origin's doing.
        page.goto(f"{api}/ui")
        page.add_script_tag(content=ATTACK)
        page.evaluate(run_attack.replace("false)", "true)"))
        assert database.flow_state("orders").paused
        assert [m.status for m in database.queue("orders").messages()] == ["Cancelled"] * 3
    database.close()


@needs_browser
def test_a_domain_rebound_to_loopback_cannot_reach_a_local_server_without_tokens(
    tmp_path: Path, browser: Any
) -> None:
    """DNS rebinding: a page on a domain its owner points at 127.0.0.1 is same-origin with a local
    `tablequeue dev` to the browser. Chromium maps the domain as such a DNS answer would."""
    database, _ = seeded(tmp_path)
    with serve_api(database, listen_host="127.0.0.1") as api:
        rebound = api.replace("127.0.0.1", "rebound.test")
        mapped = browser.browser_type.launch(
            executable_path=str(CHROMIUM),
            args=[*CHROMIUM_ARGS, "--host-resolver-rules=MAP rebound.test 127.0.0.1"],
            headless=True,
        )
        try:
            page = mapped.new_page()
            assert page.goto(f"{rebound}/livez").status == 403
            answers = page.evaluate(
                """async (base) => [
                  (await fetch(base + "/queues")).status,
                  (await fetch(base + "/queues/orders/pause", {method: "POST"})).status,
                ]""",
                rebound,
            )
            assert answers == [403, 403]
            assert page.goto(f"{api}/ui").status == 200  # its own names still work
        finally:
            mapped.close()
    assert not database.flow_state("orders").paused
    database.close()
