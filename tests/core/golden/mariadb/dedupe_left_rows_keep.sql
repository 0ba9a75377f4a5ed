SELECT orders.id, orders.message_id, orders.tracking_id, orders.version, orders.status
FROM orders
WHERE orders.message_id IN (__[POSTCOMPILE_b_message_ids]);
