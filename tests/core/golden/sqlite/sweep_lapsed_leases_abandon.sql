UPDATE orders
SET status=CASE WHEN (orders.attempts = ?) THEN 'Pending' ELSE 'Abandoned' END,
    lease_expires_at=?,
    last_error=(? || coalesce(orders.lease_owner, ?) || ? || coalesce(orders.correlation_id, ?)),
    updated_at=(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
WHERE orders.status = 'Leased'
  AND orders.lease_expires_at < (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
RETURNING status, id, tracking_id, lease_owner, correlation_id, attempts;
