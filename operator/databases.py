"""The operator's databases: one `Database` (engine and connection pool) per URL, shared by every
Queue that names it, the URL each Queue was last seen with, and each database's own threads for
its work (`bounded`), so that one database that stops answering never holds the others up."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as WaitedTooLong
from typing import TypeVar

from tablequeue import Database, TableQueueError, connect
from tablequeue.errors import DatabaseUnavailable

from .conditions import NotReady

QueueKey = tuple[str, str]
"""(namespace, name) of a Queue."""
T = TypeVar("T")
LANES_PER_DATABASE = 4
"""Threads that run one database's work: a database that hangs holds at most these."""
DATABASE_WORK_SECONDS = 60.0
"""The longest a handler waits for one Queue's database work before reporting the database
as not answering (the connect and statement bounds normally end it sooner)."""


class Databases:
    """Handlers run in threads: connecting is under a lock so that a URL gets one pool."""

    def __init__(self) -> None:
        self._by_url: dict[str, Database] = {}
        self._lock = threading.Lock()
        self._last_urls: dict[QueueKey, str] = {}
        self._lanes: dict[str, ThreadPoolExecutor] = {}

    def connect(self, url: str) -> Database:
        """The Database of this URL; an invalid URL is `DatabaseReachable=False`."""
        with self._lock:
            if url not in self._by_url:
                try:
                    self._by_url[url] = connect(url)
                except TableQueueError as error:
                    raise NotReady("DatabaseReachable", "InvalidDatabaseURL", str(error)) from None
            return self._by_url[url]

    def of_queue(self, queue: QueueKey, url: str) -> Database:
        """The Database of a Queue, remembering its URL for `last_url`."""
        self._last_urls[queue] = url
        return self.connect(url)

    def last_url(self, queue: QueueKey) -> str | None:
        """The URL a Queue was last seen with: deleting a namespace deletes the Secret at the
        same time as the Queue, and the table must still be dropped."""
        return self._last_urls.get(queue)

    def forget(self, queue: QueueKey) -> None:
        self._last_urls.pop(queue, None)

    def bounded(
        self, database: Database, work: Callable[[], T], seconds: float = DATABASE_WORK_SECONDS
    ) -> T:
        """Run `work` on the database's own threads and wait at most `seconds`: a database that
        stops answering mid-statement (no server left to enforce a statement timeout) holds its
        own threads, never the handlers that serve the other Queues."""
        with self._lock:
            lanes = self._lanes.get(database.shown_url)
            if lanes is None:
                lanes = self._lanes[database.shown_url] = ThreadPoolExecutor(
                    LANES_PER_DATABASE, thread_name_prefix="database"
                )
        try:
            return lanes.submit(work).result(timeout=seconds)
        except WaitedTooLong:
            raise DatabaseUnavailable(
                f"{database.shown_url} did not answer within {seconds:g} s"
            ) from None

    def close(self) -> None:
        with self._lock:
            for lanes in self._lanes.values():
                lanes.shutdown(wait=False, cancel_futures=True)
            self._lanes.clear()
            for database in self._by_url.values():
                database.close()
            self._by_url.clear()
