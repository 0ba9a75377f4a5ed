INSERT INTO tablequeue_workers (worker_id, queue, host, pid, version, heartbeat_seconds, started_at, last_seen, in_flight, processed, failed)
VALUES (?, ?, ?, ?, ?, ?, (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'), (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'), ?, ?, ?)
ON CONFLICT (worker_id)
DO UPDATE
SET queue = excluded.queue,
    host = excluded.host,
    pid = excluded.pid,
    version = excluded.version,
    heartbeat_seconds = excluded.heartbeat_seconds,
    last_seen = excluded.last_seen,
    in_flight = excluded.in_flight,
    processed = excluded.processed,
    failed = excluded.failed;
