"""The operator's databases: one `Database` (engine and connection pool) per URL, shared by every
Queue that names it, and the URL each Queue was last seen with."""

from __future__ import annotations

import threading

from tablequeue import Database, TableQueueError, connect

from .conditions import NotReady

QueueKey = tuple[str, str]
"""(namespace, name) of a Queue."""


class Databases:
    """Handlers run in threads: connecting is under a lock so that a URL gets one pool."""

    def __init__(self) -> None:
        self._by_url: dict[str, Database] = {}
        self._lock = threading.Lock()
        self._last_urls: dict[QueueKey, str] = {}

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

    def close(self) -> None:
        with self._lock:
            for database in self._by_url.values():
                database.close()
            self._by_url.clear()
