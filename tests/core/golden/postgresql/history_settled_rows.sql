SELECT orders.id, orders.correlation_id, orders.status, orders.last_error
FROM orders
WHERE orders.id IN (__[POSTCOMPILE_b_ids])
  AND orders.status IN ('Processed', 'Sleeping', 'Error')
  AND orders.lease_owner = %(b_owner)s::VARCHAR
  AND orders.lease_expires_at IS NULL;
