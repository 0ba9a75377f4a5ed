UPDATE orders
SET status='Processed',
    previous_message=CASE WHEN (orders.message_id IS NOT NULL) THEN orders.message ELSE orders.previous_message END,
    lease_expires_at=?,
    result=?,
    progress=coalesce(?, orders.progress),
    updated_at=(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'),
    processed_at=(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
WHERE orders.id = ?
  AND orders.version = ?
  AND orders.lease_owner = ?
  AND orders.correlation_id = ?
  AND (orders.status || '') = 'Leased';
