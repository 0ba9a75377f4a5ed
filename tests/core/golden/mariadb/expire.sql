UPDATE orders
SET status='Expired',
    updated_at=utc_timestamp(6)
WHERE orders.status IN ('Pending', 'Sleeping')
  AND orders.expires_at <= utc_timestamp(6)
  AND orders.id IN (__[POSTCOMPILE_b_ids]);
