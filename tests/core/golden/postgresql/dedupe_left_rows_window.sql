SELECT orders.id, orders.message_id, orders.tracking_id, orders.version, orders.status, CASE WHEN (orders.created_at > now() + CAST(-%(b_window)s AS FLOAT) * interval '1 second') THEN 1 ELSE 0 END AS within
FROM orders
WHERE orders.message_id IN (__[POSTCOMPILE_b_message_ids]);
