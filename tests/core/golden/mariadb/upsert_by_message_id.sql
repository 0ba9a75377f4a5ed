INSERT INTO orders (message_id, status, priority, message, headers, version, attempts, process_after, expires_at, tracking_id, app_correlation_id, label, group_key, created_at, updated_at)
SELECT b.b_message_id, CASE WHEN (b.b_scheduled = 1 AND CASE WHEN ((SELECT tablequeue_queues.default_status
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = %(b_queue)s) IS NULL) THEN NULL ELSE coalesce(b.b_status, (SELECT tablequeue_queues.default_status
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = %(b_queue)s)) END = 'Pending') THEN 'Sleeping' ELSE CASE WHEN ((SELECT tablequeue_queues.default_status
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = %(b_queue)s) IS NULL) THEN NULL ELSE coalesce(b.b_status, (SELECT tablequeue_queues.default_status
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = %(b_queue)s)) END END AS anon_1, b.b_priority, coalesce(b.b_message, 'null') AS coalesce_1, b.b_headers, 1, 0, coalesce(b.b_at, timestampadd(MICROSECOND, CAST(round(b.b_after * 1000000) AS SIGNED INTEGER), utc_timestamp(6))) AS coalesce_2, coalesce(b.b_expires_at, timestampadd(MICROSECOND, CAST(round(b.b_expires_after * 1000000) AS SIGNED INTEGER), utc_timestamp(6))) AS coalesce_3, b.b_tracking_id, b.b_correlation_id, b.b_label, b.b_group_key, utc_timestamp(6) AS utc_timestamp_1, utc_timestamp(6) AS utc_timestamp__1
FROM json_table(%(b_rows)s, '$[*]' COLUMNS (b_message_id VARCHAR(400) PATH '$.b_message_id', b_status VARCHAR(64) PATH '$.b_status', b_scheduled BOOLEAN PATH '$.b_scheduled', b_priority BIGINT PATH '$.b_priority', b_message JSON PATH '$.b_message', b_headers JSON PATH '$.b_headers', b_at DATETIME(6) PATH '$.b_at', b_after DOUBLE PATH '$.b_after', b_expires_at DATETIME(6) PATH '$.b_expires_at', b_expires_after DOUBLE PATH '$.b_expires_after', b_tracking_id CHAR(36) PATH '$.b_tracking_id', b_correlation_id VARCHAR(128) PATH '$.b_correlation_id', b_label VARCHAR(200) PATH '$.b_label', b_group_key VARCHAR(200) PATH '$.b_group_key')) AS b
ON DUPLICATE KEY UPDATE message = VALUES(message),
    headers = VALUES(headers),
    priority = VALUES(priority),
    process_after = VALUES(process_after),
    expires_at = VALUES(expires_at),
    app_correlation_id = VALUES(app_correlation_id),
    label = VALUES(label),
    group_key = VALUES(group_key),
    version = (orders.version + %(version_1)s),
    status = CASE WHEN (orders.status = 'Leased' AND VALUES(status) IN ('Pending', 'Sleeping')) THEN orders.status ELSE VALUES(status) END,
    attempts = %(param_1)s,
    updated_at = utc_timestamp(6)
RETURNING orders.id, orders.message_id, orders.tracking_id, orders.version, orders.status;
