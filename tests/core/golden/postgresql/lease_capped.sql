UPDATE orders
SET status='Leased',
    attempts=(orders.attempts + %(attempts_1)s::INTEGER),
    lease_expires_at=(now() + CAST(%(b_lease)s AS FLOAT) * interval '1 second'),
    lease_owner=%(b_owner)s::VARCHAR,
    correlation_id=%(b_cid)s::VARCHAR,
    updated_at=now(),
    started_at=now()
WHERE orders.id IN (SELECT orders.id
    FROM orders
    WHERE orders.status IN ('Pending', 'Sleeping')
      AND orders.process_after <= now()
      AND (orders.expires_at IS NULL OR orders.expires_at > now())
      AND NOT (EXISTS (SELECT *
          FROM tablequeue_queues
          WHERE tablequeue_queues.name = %(b_queue)s::VARCHAR
            AND (tablequeue_queues.paused_at IS NOT NULL OR tablequeue_queues.group_limit IS NOT NULL)))
      AND NOT (EXISTS (SELECT *
          FROM tablequeue_rate_limits
          WHERE tablequeue_rate_limits.queue = %(b_queue)s::VARCHAR))
    ORDER BY orders.priority DESC, orders.process_after, orders.id
    LIMIT %(b_n)s::INTEGER
    FOR UPDATE SKIP LOCKED)
RETURNING orders.id, orders.message_id, orders.status, orders.priority, orders.message, orders.previous_message, orders.headers, orders.version, orders.attempts, orders.process_after, orders.expires_at, orders.lease_expires_at, orders.lease_owner, orders.correlation_id, orders.tracking_id, orders.result, orders.progress, orders.last_error, orders.created_at, orders.updated_at, orders.processed_at, orders.started_at, orders.app_correlation_id, orders.label, orders.group_key;
