UPDATE orders
SET status=CASE WHEN (orders.attempts = ?) THEN 'Pending' ELSE 'Abandoned' END,
    lease_expires_at=?,
    last_error=(? + coalesce(orders.lease_owner, ?) + ? + coalesce(orders.correlation_id, ?)),
    updated_at=sysutcdatetime()
OUTPUT inserted.status, inserted.id, inserted.tracking_id, inserted.lease_owner, inserted.correlation_id, inserted.attempts
WHERE orders.status = 'Leased'
  AND orders.lease_expires_at < sysutcdatetime();
