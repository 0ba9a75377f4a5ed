SELECT orders.id
FROM orders
WHERE orders.status IN ('Pending', 'Sleeping')
  AND orders.process_after <= (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
  AND (orders.expires_at IS NULL OR orders.expires_at > (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'))
LIMIT ?
OFFSET ?;
