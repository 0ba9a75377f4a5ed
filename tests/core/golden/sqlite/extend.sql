UPDATE orders
SET lease_expires_at=(strftime('%Y-%m-%d %H:%M:%f', 'now', CAST(round(?, 3) AS TEXT) || ' seconds') || '000'),
    updated_at=(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
WHERE orders.id IN (__[POSTCOMPILE_b_ids])
  AND (orders.status || '') = 'Leased'
  AND orders.lease_owner = ?
RETURNING id;
