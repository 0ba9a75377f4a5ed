UPDATE orders
SET status='Leased',
    attempts=(orders.attempts + ?),
    lease_expires_at=(strftime('%Y-%m-%d %H:%M:%f', 'now', CAST(round(?, 3) AS TEXT) || ' seconds') || '000'),
    lease_owner=?,
    correlation_id=?,
    updated_at=(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'),
    started_at=(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
WHERE orders.id IN (SELECT orders.id
    FROM orders INDEXED BY "orders_lease"
    WHERE orders.status IN ('Pending', 'Sleeping')
      AND orders.process_after <= (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
      AND (orders.expires_at IS NULL OR orders.expires_at > (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'))
      AND NOT (EXISTS (SELECT *
          FROM tablequeue_queues
          WHERE tablequeue_queues.name = ?
            AND (tablequeue_queues.paused_at IS NOT NULL OR tablequeue_queues.max_leased IS NOT NULL OR tablequeue_queues.group_limit IS NOT NULL)))
      AND NOT (EXISTS (SELECT *
          FROM tablequeue_rate_limits
          WHERE tablequeue_rate_limits.queue = ?))
    ORDER BY orders.priority DESC, orders.process_after, orders.id
    LIMIT ?
    OFFSET ?)
RETURNING id, message_id, status, priority, message, previous_message, headers, version, attempts, process_after, expires_at, lease_expires_at, lease_owner, correlation_id, tracking_id, result, progress, last_error, created_at, updated_at, processed_at, started_at, app_correlation_id, label, group_key;
