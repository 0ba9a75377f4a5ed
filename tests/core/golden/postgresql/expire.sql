UPDATE orders
SET status='Expired',
    updated_at=now()
WHERE orders.status IN ('Pending', 'Sleeping')
  AND orders.expires_at <= now()
RETURNING orders.id;
