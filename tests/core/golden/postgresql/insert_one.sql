INSERT INTO orders (message_id, status, priority, message, headers, version, attempts, process_after, expires_at, tracking_id, created_at, updated_at) VALUES (%(b_message_id)s::VARCHAR, CASE WHEN (%(b_scheduled)s AND CASE WHEN ((SELECT tablequeue_queues.default_status 
FROM tablequeue_queues 
WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR) IS NULL) THEN NULL ELSE coalesce(%(b_status)s::VARCHAR, (SELECT tablequeue_queues.default_status 
FROM tablequeue_queues 
WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR)) END = 'Pending') THEN 'Sleeping' ELSE CASE WHEN ((SELECT tablequeue_queues.default_status 
FROM tablequeue_queues 
WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR) IS NULL) THEN NULL ELSE coalesce(%(b_status)s::VARCHAR, (SELECT tablequeue_queues.default_status 
FROM tablequeue_queues 
WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR)) END END, %(b_priority)s::SMALLINT, coalesce(%(b_message)s::JSONB, 'null'), %(b_headers)s::JSONB, 1, 0, coalesce(%(b_at)s::TIMESTAMP WITH TIME ZONE, now() + CAST(%(b_after)s AS FLOAT) * interval '1 second'), coalesce(%(b_expires_at)s::TIMESTAMP WITH TIME ZONE, now() + CAST(%(b_expires_after)s AS FLOAT) * interval '1 second'), %(b_tracking_id)s::UUID, now(), now()) RETURNING orders.id, orders.message_id, orders.tracking_id, orders.version, orders.status, (SELECT pg_notify(%(b_channel)s::VARCHAR, '') AS pg_notify_1) AS notified;
