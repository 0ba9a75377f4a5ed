MERGE INTO orders WITH (HOLDLOCK)
USING (SELECT b.b_message_id AS message_id, CASE WHEN (b.b_scheduled = 1 AND CASE WHEN ((SELECT tablequeue_queues.default_status
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = ?) IS NULL) THEN NULL ELSE coalesce(b.b_status, (SELECT tablequeue_queues.default_status
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = ?)) END = 'Pending') THEN 'Sleeping' ELSE CASE WHEN ((SELECT tablequeue_queues.default_status
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = ?) IS NULL) THEN NULL ELSE coalesce(b.b_status, (SELECT tablequeue_queues.default_status
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = ?)) END END AS status, b.b_priority AS priority, coalesce(b.b_message, 'null') AS message, b.b_headers AS headers, 1 AS version, 0 AS attempts, coalesce(b.b_at, dateadd(day, CAST(b.b_after / (86400e0 + 0.0) AS INTEGER), dateadd(second, CAST(b.b_after - CAST(b.b_after / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER), dateadd(microsecond, CAST(round(((b.b_after - CAST(b.b_after / (86400e0 + 0.0) AS INTEGER) * 86400e0) - CAST(b.b_after - CAST(b.b_after / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER)) * 1000000, 0) AS INTEGER), sysutcdatetime())))) AS process_after, coalesce(b.b_expires_at, dateadd(day, CAST(b.b_expires_after / (86400e0 + 0.0) AS INTEGER), dateadd(second, CAST(b.b_expires_after - CAST(b.b_expires_after / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER), dateadd(microsecond, CAST(round(((b.b_expires_after - CAST(b.b_expires_after / (86400e0 + 0.0) AS INTEGER) * 86400e0) - CAST(b.b_expires_after - CAST(b.b_expires_after / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER)) * 1000000, 0) AS INTEGER), sysutcdatetime())))) AS expires_at, b.b_tracking_id AS tracking_id, b.b_correlation_id AS app_correlation_id, b.b_label AS label, b.b_group_key AS group_key, sysutcdatetime() AS created_at, sysutcdatetime() AS updated_at
    FROM OPENJSON(?) WITH (b_message_id NVARCHAR(400) '$.b_message_id', b_status NVARCHAR(64) '$.b_status', b_scheduled BIT '$.b_scheduled', b_priority BIGINT '$.b_priority', b_message NVARCHAR(max) '$.b_message', b_headers NVARCHAR(max) '$.b_headers', b_at DATETIME2(6) '$.b_at', b_after FLOAT '$.b_after', b_expires_at DATETIME2(6) '$.b_expires_at', b_expires_after FLOAT '$.b_expires_after', b_tracking_id UNIQUEIDENTIFIER '$.b_tracking_id', b_correlation_id NVARCHAR(128) '$.b_correlation_id', b_label NVARCHAR(200) '$.b_label', b_group_key NVARCHAR(200) '$.b_group_key') AS b) AS s ON orders.message_id = s.message_id
WHEN MATCHED AND orders.created_at <= dateadd(day, CAST((-?) / (86400e0 + 0.0) AS INTEGER), dateadd(second, CAST(-? - CAST((-?) / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER), dateadd(microsecond, CAST(round(((-? - CAST((-?) / (86400e0 + 0.0) AS INTEGER) * 86400e0) - CAST(-? - CAST((-?) / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER)) * 1000000, 0) AS INTEGER), sysutcdatetime()))) THEN UPDATE
SET message = s.message,
    headers = s.headers,
    priority = s.priority,
    process_after = s.process_after,
    expires_at = s.expires_at,
    app_correlation_id = s.app_correlation_id,
    label = s.label,
    group_key = s.group_key,
    version = orders.version + ?,
    status = CASE WHEN (orders.status = 'Leased' AND s.status IN ('Pending', 'Sleeping')) THEN orders.status ELSE s.status END,
    attempts = ?,
    updated_at = sysutcdatetime(),
    created_at = sysutcdatetime()
WHEN NOT MATCHED THEN INSERT (message_id, status, priority, message, headers, version, attempts, process_after, expires_at, tracking_id, app_correlation_id, label, group_key, created_at, updated_at)
VALUES (s.message_id, s.status, s.priority, s.message, s.headers, s.version, s.attempts, s.process_after, s.expires_at, s.tracking_id, s.app_correlation_id, s.label, s.group_key, s.created_at, s.updated_at)
OUTPUT inserted.id, inserted.message_id, inserted.tracking_id, inserted.version, inserted.status;
