INSERT INTO orders (message_id, status, priority, message, headers, version, attempts, process_after, expires_at, tracking_id, created_at, updated_at, app_correlation_id, label, group_key)
VALUES (%(b_message_id)s::VARCHAR, (SELECT CASE WHEN (%(b_scheduled)s AND coalesce(%(b_status)s::VARCHAR, tablequeue_queues.default_status) = 'Pending') THEN 'Sleeping' ELSE coalesce(%(b_status)s::VARCHAR, tablequeue_queues.default_status) END AS anon_1
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR), %(b_priority)s::SMALLINT, coalesce(%(b_message)s::JSONB, 'null'), %(b_headers)s::JSONB, 1, 0, coalesce(%(b_at)s::TIMESTAMP WITH TIME ZONE, now() + CAST(%(b_after)s AS FLOAT) * interval '1 second'), coalesce(%(b_expires_at)s::TIMESTAMP WITH TIME ZONE, now() + CAST(%(b_expires_after)s AS FLOAT) * interval '1 second'), %(b_tracking_id)s::UUID, now(), now(), %(b_correlation_id)s::VARCHAR, %(b_label)s::VARCHAR, %(b_group_key)s::VARCHAR)
ON CONFLICT (message_id)
WHERE message_id IS NOT NULL
DO NOTHING
RETURNING orders.id, orders.message_id, orders.tracking_id, orders.version, orders.status, (SELECT pg_notify(%(b_channel)s::VARCHAR, '') AS pg_notify_1) AS notified;
