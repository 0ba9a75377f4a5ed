SELECT orders.id
FROM orders
WHERE orders.id IN (__[POSTCOMPILE_b_ids])
  AND (orders.status || '') = 'Leased'
  AND orders.lease_owner = %(b_owner)s::VARCHAR;
