UPDATE orders
SET status='Expired',
    updated_at=(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
WHERE orders.status IN ('Pending', 'Sleeping')
  AND orders.expires_at <= (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
RETURNING id;
