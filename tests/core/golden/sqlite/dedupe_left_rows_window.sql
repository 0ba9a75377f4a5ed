SELECT orders.id, orders.message_id, orders.tracking_id, orders.version, orders.status, CASE WHEN (orders.created_at > (strftime('%Y-%m-%d %H:%M:%f', 'now', CAST(round(-?, 3) AS TEXT) || ' seconds') || '000')) THEN 1 ELSE 0 END AS within
FROM orders
WHERE orders.message_id IN (__[POSTCOMPILE_b_message_ids]);
