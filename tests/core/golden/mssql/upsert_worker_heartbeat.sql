MERGE INTO tablequeue_workers WITH (HOLDLOCK)
USING (SELECT ? AS worker_id, ? AS queue, ? AS host, ? AS pid, ? AS version, ? AS heartbeat_seconds, sysutcdatetime() AS started_at, sysutcdatetime() AS last_seen, ? AS in_flight, ? AS processed, ? AS failed) AS s ON tablequeue_workers.worker_id = s.worker_id
WHEN MATCHED THEN UPDATE
SET queue = s.queue,
    host = s.host,
    pid = s.pid,
    version = s.version,
    heartbeat_seconds = s.heartbeat_seconds,
    last_seen = s.last_seen,
    in_flight = s.in_flight,
    processed = s.processed,
    failed = s.failed
WHEN NOT MATCHED THEN INSERT (worker_id, queue, host, pid, version, heartbeat_seconds, started_at, last_seen, in_flight, processed, failed)
VALUES (s.worker_id, s.queue, s.host, s.pid, s.version, s.heartbeat_seconds, s.started_at, s.last_seen, s.in_flight, s.processed, s.failed);
