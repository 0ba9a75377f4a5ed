"""Progress of HTTP handlers: `POST /progress/{trackingId}` on the worker's port while the
handler runs, stored under the worker's lease and shown where progress shows (API, UI)."""

from __future__ import annotations

import json
import uuid

from tablequeue.database import Database
from tests.support import worker_app
from tests.support.api_server import api_client
from tests.support.waiting import wait_until

from .helpers import FAST_POLL, MakeQueue, StartWorker, enqueue


def test_http_handler_reports_progress_while_it_runs(
    make_queue: MakeQueue,
    database: Database,
    db_url: str,
    start_worker: StartWorker,
    app: worker_app.App,
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")
    reports = [{"percent": 10}, {"percent": 50}, "not json", '{"percentage": 60}', "[1]"]
    [held] = enqueue(queue, [{"report": reports, "hold": True}])
    worker = start_worker("orders", db_url, app.url, *FAST_POLL)
    wait_until(lambda: len(app.progress_answers) == len(reports), timeout=30)

    statuses = [status for status, _ in app.progress_answers]
    assert statuses == [204, 204, 400, 400, 400]
    assert "must be JSON" in json.loads(app.progress_answers[2][1])["error"]
    assert "must be a JSON object" in json.loads(app.progress_answers[3][1])["error"]
    running = queue.get(held)
    assert running.status == "Leased" and running.progress == {"percent": 50}
    url = app.headers[held]["tablequeue-progress-url"]
    base = f"http://127.0.0.1:{worker.port}/progress/"
    assert url.startswith(f"{base}{running.tracking_id}?key=")

    with api_client(database) as client:  # where progress shows: the job and the message page
        job = client.get(f"/jobs/{running.tracking_id}").json()
        assert (job["status"], job["progress"]) == ("Leased", {"percent": 50})
        page = client.get(f"/ui/queues/orders/messages/{held}")
        assert page.status_code == 200 and "percent" in page.text

    assert worker_app.report(f"{base}{uuid.uuid4()}", 1)[0] == 404  # not running here
    assert worker_app.report(f"{base}not-a-uuid", 1)[0] == 400

    # Knowing the tracking id is not enough: only the call's own URL carries the key.
    for stranger in (f"{base}{running.tracking_id}", url[:-1] + ("0" if url[-1] != "0" else "1")):
        status, text = worker_app.report(stranger, {"percent": 666})
        assert status == 403 and "key" in json.loads(text)["error"], text
    # Hostile bodies are 400s, not 500s: nested past the depth limit, or not UTF-8.
    for hostile in ('{"progress": ' + "[" * 100_000 + "]" * 100_000 + "}", b'{"progress": "\xff"}'):
        status, text = worker_app.report(url, hostile)
        assert status == 400 and json.loads(text)["error"], text
    assert queue.get(held).progress == {"percent": 50}

    app.release.set()
    wait_until(lambda: queue.get(held).status == "Processed", timeout=30)
    assert queue.get(held).progress == {"percent": 50}  # an answer without progress keeps it
    assert worker_app.report(url, {"percent": 99})[0] == 404  # finished: no longer held
    assert queue.get(held).progress == {"percent": 50}


def test_progress_of_a_cancelled_message_is_refused(
    make_queue: MakeQueue, db_url: str, start_worker: StartWorker, app: worker_app.App
) -> None:
    queue = make_queue("orders", keep_processed_for="1h")
    [held] = enqueue(queue, [{"report": [{"step": 1}], "hold": True}])
    start_worker("orders", db_url, app.url, *FAST_POLL)
    wait_until(lambda: len(app.progress_answers) == 1, timeout=30)
    assert app.progress_answers[0][0] == 204
    tracking_id = queue.get(held).tracking_id
    queue.cancel(tracking_id)

    # The worker refuses whether it has noticed the cancellation yet (404: handler stopped) or
    # not (409: its lease no longer holds the row); the row keeps its progress either way.
    status, text = worker_app.report(app.headers[held]["tablequeue-progress-url"], {"step": 2})
    assert status in (404, 409), text
    assert "error" in json.loads(text)
    stored = queue.get(held)
    assert (stored.status, stored.progress) == ("Cancelled", {"step": 1})
