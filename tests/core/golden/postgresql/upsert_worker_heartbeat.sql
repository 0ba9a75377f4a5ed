INSERT INTO tablequeue_workers (worker_id, queue, host, pid, version, heartbeat_seconds, started_at, last_seen, in_flight, processed, failed)
VALUES (%(worker_id)s::VARCHAR, %(queue)s::VARCHAR, %(host)s::VARCHAR, %(pid)s::INTEGER, %(version)s::VARCHAR, %(heartbeat_seconds)s, now(), now(), %(in_flight)s::INTEGER, %(processed)s::BIGINT, %(failed)s::BIGINT)
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
