UPDATE orders
SET status='Pending',
    attempts=CASE WHEN (orders.attempts > ?) THEN orders.attempts - ? ELSE ? END,
    lease_expires_at=?,
    updated_at=(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
WHERE orders.id IN (__[POSTCOMPILE_b_ids])
  AND (orders.status || '') = 'Leased'
  AND orders.lease_owner = ?;
