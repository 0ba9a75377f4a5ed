UPDATE orders
SET status='Expired',
    updated_at=sysutcdatetime()
OUTPUT inserted.id
WHERE orders.status IN ('Pending', 'Sleeping')
  AND orders.expires_at <= sysutcdatetime();
