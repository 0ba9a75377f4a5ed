SELECT orders.id
FROM orders
WHERE orders.id IN (__[POSTCOMPILE_b_ids]);
