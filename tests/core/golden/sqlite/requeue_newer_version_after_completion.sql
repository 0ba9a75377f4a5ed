UPDATE orders
SET status=CASE WHEN (orders.process_after > (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')) THEN 'Sleeping' ELSE ? END,
    previous_message=CASE WHEN (orders.message_id IS NOT NULL) THEN ? ELSE orders.previous_message END,
    attempts=?,
    lease_expires_at=?,
    updated_at=(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
WHERE orders.id = ?
  AND orders.version != ?
  AND orders.lease_owner = ?
  AND orders.correlation_id = ?
  AND (orders.status || '') = 'Leased';
