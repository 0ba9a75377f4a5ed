INSERT INTO tablequeue_workers (worker_id, queue, host, pid, version, heartbeat_seconds, started_at, last_seen, in_flight, processed, failed)
VALUES (%(worker_id)s, %(queue)s, %(host)s, %(pid)s, %(version)s, %(heartbeat_seconds)s, utc_timestamp(6), utc_timestamp(6), %(in_flight)s, %(processed)s, %(failed)s)
ON DUPLICATE KEY UPDATE queue = VALUES(queue),
    host = VALUES(host),
    pid = VALUES(pid),
    version = VALUES(version),
    heartbeat_seconds = VALUES(heartbeat_seconds),
    last_seen = VALUES(last_seen),
    in_flight = VALUES(in_flight),
    processed = VALUES(processed),
    failed = VALUES(failed);
