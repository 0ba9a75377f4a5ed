UPDATE orders
SET status=?,
    previous_message=CASE WHEN (orders.message_id IS NOT NULL) THEN ? ELSE orders.previous_message END,
    attempts=?,
    lease_expires_at=?,
    updated_at=(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
WHERE orders.id = ?
  AND orders.version != ?
  AND orders.lease_owner = ?
  AND orders.correlation_id = ?
  AND (orders.status || '') = 'Leased';
