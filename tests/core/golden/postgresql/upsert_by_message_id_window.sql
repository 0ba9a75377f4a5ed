INSERT INTO orders (message_id, status, priority, message, headers, version, attempts, process_after, expires_at, tracking_id, app_correlation_id, label, group_key, created_at, updated_at)
SELECT b.b_message_id, CASE WHEN (b.b_scheduled AND CASE WHEN ((SELECT tablequeue_queues.default_status
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR) IS NULL) THEN NULL ELSE coalesce(b.b_status, (SELECT tablequeue_queues.default_status
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR)) END = 'Pending') THEN 'Sleeping' ELSE CASE WHEN ((SELECT tablequeue_queues.default_status
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR) IS NULL) THEN NULL ELSE coalesce(b.b_status, (SELECT tablequeue_queues.default_status
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR)) END END AS anon_1, b.b_priority, coalesce(b.b_message, 'null') AS coalesce_1, b.b_headers, 1, 0, coalesce(b.b_at, now() + CAST(b.b_after AS FLOAT) * interval '1 second') AS coalesce_2, coalesce(b.b_expires_at, now() + CAST(b.b_expires_after AS FLOAT) * interval '1 second') AS coalesce_3, b.b_tracking_id, b.b_correlation_id, b.b_label, b.b_group_key, now() AS now_1, now() AS now__1
FROM unnest(%(b_message_id)s::VARCHAR(400)[], %(b_status)s::VARCHAR(64)[], %(b_scheduled)s::BOOLEAN[], %(b_priority)s::SMALLINT[], CAST(%(b_message)s::TEXT[] AS JSONB[]), CAST(%(b_headers)s::TEXT[] AS JSONB[]), %(b_at)s::TIMESTAMP WITH TIME ZONE[], %(b_after)s::FLOAT[], %(b_expires_at)s::TIMESTAMP WITH TIME ZONE[], %(b_expires_after)s::FLOAT[], %(b_tracking_id)s::UUID[], %(b_correlation_id)s::VARCHAR(128)[], %(b_label)s::VARCHAR(200)[], %(b_group_key)s::VARCHAR(200)[]) AS b(b_message_id, b_status, b_scheduled, b_priority, b_message, b_headers, b_at, b_after, b_expires_at, b_expires_after, b_tracking_id, b_correlation_id, b_label, b_group_key)
ON CONFLICT (message_id)
WHERE message_id IS NOT NULL
DO UPDATE
SET status = CASE WHEN (orders.status = 'Leased' AND excluded.status IN ('Pending', 'Sleeping')) THEN orders.status ELSE excluded.status END,
    priority = excluded.priority,
    message = excluded.message,
    headers = excluded.headers,
    version = (orders.version + %(version_1)s::INTEGER),
    attempts = %(param_1)s::INTEGER,
    process_after = excluded.process_after,
    expires_at = excluded.expires_at,
    created_at = now(),
    updated_at = now(),
    app_correlation_id = excluded.app_correlation_id,
    label = excluded.label,
    group_key = excluded.group_key
WHERE orders.created_at <= now() + CAST(-%(b_window)s AS FLOAT) * interval '1 second'
RETURNING orders.id, orders.message_id, orders.tracking_id, orders.version, orders.status, (SELECT pg_notify(%(b_channel)s::VARCHAR, '') AS pg_notify_1) AS notified;
