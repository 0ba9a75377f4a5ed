(SELECT orders.id, orders.message_id, orders.status, orders.priority, orders.message, orders.previous_message, orders.headers, orders.version, orders.attempts, orders.process_after, orders.expires_at, orders.lease_expires_at, orders.lease_owner, orders.correlation_id, orders.tracking_id, orders.result, orders.progress, orders.last_error, orders.created_at, orders.updated_at, orders.processed_at, orders.started_at, orders.app_correlation_id, orders.label, orders.group_key, utc_timestamp(6) AS b_now
    FROM orders FORCE INDEX (`orders_lease`)
    WHERE orders.status = 'Pending'
      AND orders.process_after <= utc_timestamp(6)
      AND (orders.expires_at IS NULL OR orders.expires_at > utc_timestamp(6))
      AND NOT (EXISTS (SELECT *
          FROM tablequeue_queues
          WHERE tablequeue_queues.name = %(b_queue)s
            AND (tablequeue_queues.paused_at IS NOT NULL OR tablequeue_queues.max_leased IS NOT NULL)))
      AND NOT (EXISTS (SELECT *
          FROM tablequeue_rate_limits
          WHERE tablequeue_rate_limits.queue = %(b_queue)s))
      AND (orders.group_key IS NULL OR NOT (EXISTS (SELECT *
          FROM orders AS ahead
          WHERE ahead.group_key = orders.group_key
            AND ahead.status IN ('Pending', 'Sleeping', 'Leased')
            AND ahead.id < orders.id)) AND NOT (EXISTS (SELECT *
          FROM orders AS ahead
          WHERE ahead.group_key = orders.group_key
            AND ahead.status = 'Leased'
            AND ahead.id > orders.id)))
    ORDER BY orders.priority DESC, orders.process_after, orders.id
    LIMIT %(b_n)s
    FOR UPDATE SKIP LOCKED)
UNION ALL (SELECT orders.id, orders.message_id, orders.status, orders.priority, orders.message, orders.previous_message, orders.headers, orders.version, orders.attempts, orders.process_after, orders.expires_at, orders.lease_expires_at, orders.lease_owner, orders.correlation_id, orders.tracking_id, orders.result, orders.progress, orders.last_error, orders.created_at, orders.updated_at, orders.processed_at, orders.started_at, orders.app_correlation_id, orders.label, orders.group_key, utc_timestamp(6) AS b_now
    FROM orders FORCE INDEX (`orders_lease`)
    WHERE orders.status = 'Sleeping'
      AND orders.process_after <= utc_timestamp(6)
      AND (orders.expires_at IS NULL OR orders.expires_at > utc_timestamp(6))
      AND NOT (EXISTS (SELECT *
          FROM tablequeue_queues
          WHERE tablequeue_queues.name = %(b_queue)s
            AND (tablequeue_queues.paused_at IS NOT NULL OR tablequeue_queues.max_leased IS NOT NULL)))
      AND NOT (EXISTS (SELECT *
          FROM tablequeue_rate_limits
          WHERE tablequeue_rate_limits.queue = %(b_queue)s))
      AND (orders.group_key IS NULL OR NOT (EXISTS (SELECT *
          FROM orders AS ahead
          WHERE ahead.group_key = orders.group_key
            AND ahead.status IN ('Pending', 'Sleeping', 'Leased')
            AND ahead.id < orders.id)) AND NOT (EXISTS (SELECT *
          FROM orders AS ahead
          WHERE ahead.group_key = orders.group_key
            AND ahead.status = 'Leased'
            AND ahead.id > orders.id)))
    ORDER BY orders.priority DESC, orders.process_after, orders.id
    LIMIT %(b_n)s
    FOR UPDATE SKIP LOCKED);
