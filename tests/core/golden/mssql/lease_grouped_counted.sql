UPDATE orders
SET status='Leased',
    attempts=(orders.attempts + ?),
    lease_expires_at=dateadd(day, CAST(? / (86400e0 + 0.0) AS INTEGER), dateadd(second, CAST(? - CAST(? / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER), dateadd(microsecond, CAST(round(((? - CAST(? / (86400e0 + 0.0) AS INTEGER) * 86400e0) - CAST(? - CAST(? / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER)) * 1000000, 0) AS INTEGER), sysutcdatetime()))),
    lease_owner=?,
    correlation_id=?,
    updated_at=sysutcdatetime(),
    started_at=sysutcdatetime()
OUTPUT inserted.id, inserted.message_id, inserted.status, inserted.priority, inserted.message, inserted.previous_message, inserted.headers, inserted.version, inserted.attempts, inserted.process_after, inserted.expires_at, inserted.lease_expires_at, inserted.lease_owner, inserted.correlation_id, inserted.tracking_id, inserted.result, inserted.progress, inserted.last_error, inserted.created_at, inserted.updated_at, inserted.processed_at, inserted.started_at, inserted.app_correlation_id, inserted.label, inserted.group_key
WHERE orders.id IN (SELECT TOP (?) orders.id
    FROM orders WITH (UPDLOCK, ROWLOCK, READPAST)
    WHERE orders.status IN ('Pending', 'Sleeping')
      AND orders.process_after <= sysutcdatetime()
      AND (orders.expires_at IS NULL OR orders.expires_at > sysutcdatetime())
      AND NOT (EXISTS (SELECT *
          FROM tablequeue_queues
          WHERE tablequeue_queues.name = ?
            AND tablequeue_queues.paused_at IS NOT NULL))
      AND NOT (EXISTS (SELECT *
          FROM tablequeue_rate_limits
          WHERE tablequeue_rate_limits.queue = ?))
      AND (orders.group_key IS NULL OR (SELECT count(*) AS count_1
          FROM orders AS ahead
          WHERE ahead.group_key = orders.group_key
            AND ahead.status IN ('Pending', 'Sleeping', 'Leased')
            AND ahead.id < orders.id) + (SELECT count(*) AS count_2
          FROM orders AS ahead
          WHERE ahead.group_key = orders.group_key
            AND ahead.status = 'Leased'
            AND ahead.id > orders.id) < ?)
    ORDER BY orders.priority DESC, orders.process_after, orders.id);
