"""The API killed (SIGKILL) while enqueue requests are in flight, again and again: a request
answered 201 is stored whole, a request cut off is stored whole or not at all (never part of a
batch), and a restarted API serves at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tablequeue import connect
from tablequeue.spec import QueueResource
from tests.support.api_server import ApiProcess
from tests.support.waiting import wait_until

KILLS = 4
BATCH = 20
CLIENTS = 4


@pytest.fixture
def api(postgres_url: str, tmp_path: Path) -> Iterator[ApiProcess]:
    running = ApiProcess(postgres_url, tmp_path)
    yield running
    if running.process is not None and running.process.poll() is None:
        running.kill()


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_api_killed_mid_request_stores_each_batch_whole_or_not_at_all(
    postgres_url: str, api: ApiProcess
) -> None:
    database = connect(postgres_url)
    database.apply(QueueResource.from_name("orders"))
    queue = database.queue("orders")
    answered: list[str] = []  # batch keys answered 201
    cut: list[str] = []  # batch keys whose request failed
    stop = threading.Event()
    lock = threading.Lock()

    def client(number: int) -> None:
        sent = 0
        while not stop.is_set():
            key = f"c{number}-{sent}"
            sent += 1
            body = [{"message": {"batch": key, "n": n}} for n in range(BATCH)]
            try:
                response = httpx.post(f"{api.base}/queues/orders", json=body, timeout=10)
                ok = response.status_code == 201
            except httpx.HTTPError:
                ok = False
            with lock:
                (answered if ok else cut).append(key)
            if not ok:
                wait_until(lambda: stop.is_set() or api.answers(), timeout=60)

    api.start()
    clients = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in clients:
        thread.start()
    try:
        for _ in range(KILLS):
            before = len(answered)
            wait_until(lambda: len(answered) >= before + 10, timeout=60)  # noqa: B023
            api.kill()
            api.start()
        before = len(answered)
        wait_until(lambda: len(answered) >= before + 10, timeout=60)
    finally:
        stop.set()
        for thread in clients:
            thread.join(timeout=60)

    stored: dict[str, int] = {}
    for message in queue.messages(limit=10_000):
        stored[message.message["batch"]] = stored.get(message.message["batch"], 0) + 1
    partial = {key: n for key, n in stored.items() if n != BATCH}
    lost = [key for key in answered if key not in stored]
    cut_but_stored = [key for key in cut if key in stored]
    print(
        f"chaos api: {len(answered) + len(cut)} batch requests of {BATCH}, {KILLS} SIGKILLs; "
        f"answered {len(answered)}, cut {len(cut)} (stored anyway {len(cut_but_stored)}), "
        f"lost {len(lost)}, partial {len(partial)}"
    )
    assert lost == [] and partial == {}
    assert set(stored) <= set(answered) | set(cut)
    database.close()
