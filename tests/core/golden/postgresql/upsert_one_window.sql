INSERT INTO orders (message_id, status, priority, message, headers, version, attempts, process_after, expires_at, tracking_id, created_at, updated_at, app_correlation_id, label, group_key)
VALUES (%(b_message_id)s::VARCHAR, (SELECT CASE WHEN (%(b_scheduled)s AND coalesce(%(b_status)s::VARCHAR, tablequeue_queues.default_status) = 'Pending') THEN 'Sleeping' ELSE coalesce(%(b_status)s::VARCHAR, tablequeue_queues.default_status) END AS anon_1
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR), %(b_priority)s::SMALLINT, coalesce(%(b_message)s::JSONB, 'null'), %(b_headers)s::JSONB, 1, 0, coalesce(%(b_at)s::TIMESTAMP WITH TIME ZONE, now() + CAST(%(b_after)s AS FLOAT) * interval '1 second'), coalesce(%(b_expires_at)s::TIMESTAMP WITH TIME ZONE, now() + CAST(%(b_expires_after)s AS FLOAT) * interval '1 second'), %(b_tracking_id)s::UUID, now(), now(), %(b_correlation_id)s::VARCHAR, %(b_label)s::VARCHAR, %(b_group_key)s::VARCHAR)
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
