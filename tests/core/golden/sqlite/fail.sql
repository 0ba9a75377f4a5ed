UPDATE orders
SET status=CASE WHEN ? THEN 'Error' ELSE 'Sleeping' END,
    process_after=CASE WHEN ? THEN orders.process_after ELSE strftime('%Y-%m-%d %H:%M:%f', 'now', CAST(round(?, 3) AS TEXT) || ' seconds') || '000' END,
    lease_expires_at=?,
    last_error=?,
    updated_at=(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
WHERE orders.id = ?
  AND orders.version = ?
  AND orders.lease_owner = ?
  AND orders.correlation_id = ?
  AND (orders.status || '') = 'Leased';
