UPDATE orders
SET status='Pending',
    attempts=CASE WHEN (orders.attempts > ?) THEN orders.attempts - ? ELSE ? END,
    lease_expires_at=?,
    updated_at=sysutcdatetime()
WHERE orders.id IN (__[POSTCOMPILE_b_ids])
  AND (orders.status + '') = 'Leased'
  AND orders.lease_owner = ?;
