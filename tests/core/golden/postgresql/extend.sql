UPDATE orders
SET lease_expires_at=(now() + CAST(%(b_lease)s AS FLOAT) * interval '1 second'),
    updated_at=now()
WHERE orders.id IN (__[POSTCOMPILE_b_ids])
  AND (orders.status || '') = 'Leased'
  AND orders.lease_owner = %(b_owner)s::VARCHAR
RETURNING orders.id;
