DELETE FROM orders WHERE orders.id IN (__[POSTCOMPILE_b_ids]) AND orders.status = 'Processed' AND orders.lease_owner = ?;
