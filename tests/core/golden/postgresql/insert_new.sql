INSERT INTO orders (message_id, status, priority, message, headers, version, attempts, process_after, expires_at, tracking_id, created_at, updated_at) SELECT b.b_message_id, CASE WHEN (b.b_scheduled AND CASE WHEN ((SELECT tablequeue_queues.default_status 
FROM tablequeue_queues 
WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR) IS NULL) THEN NULL ELSE coalesce(b.b_status, (SELECT tablequeue_queues.default_status 
FROM tablequeue_queues 
WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR)) END = 'Pending') THEN 'Sleeping' ELSE CASE WHEN ((SELECT tablequeue_queues.default_status 
FROM tablequeue_queues 
WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR) IS NULL) THEN NULL ELSE coalesce(b.b_status, (SELECT tablequeue_queues.default_status 
FROM tablequeue_queues 
WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR)) END END AS anon_1, b.b_priority, coalesce(b.b_message, 'null') AS coalesce_1, b.b_headers, 1, 0, coalesce(b.b_at, now() + CAST(b.b_after AS FLOAT) * interval '1 second') AS coalesce_2, coalesce(b.b_expires_at, now() + CAST(b.b_expires_after AS FLOAT) * interval '1 second') AS coalesce_3, b.b_tracking_id, now() AS now_1, now() AS now__1 
FROM json_to_recordset(CAST(%(b_rows)s::VARCHAR AS JSON)) AS b(b_message_id VARCHAR(400), b_status VARCHAR(64), b_scheduled BOOLEAN, b_priority SMALLINT, b_message JSONB, b_headers JSONB, b_at TIMESTAMP WITH TIME ZONE, b_after FLOAT, b_expires_at TIMESTAMP WITH TIME ZONE, b_expires_after FLOAT, b_tracking_id UUID) RETURNING orders.id, orders.message_id, orders.tracking_id, orders.version, orders.status, (SELECT pg_notify(%(b_channel)s::VARCHAR, '') AS pg_notify_1) AS notified;
