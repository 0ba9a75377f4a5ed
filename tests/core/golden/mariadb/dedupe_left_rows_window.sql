SELECT orders.id, orders.message_id, orders.tracking_id, orders.version, orders.status, CASE WHEN (orders.created_at > timestampadd(MICROSECOND, CAST(round((-%(b_window)s) * 1000000) AS SIGNED INTEGER), utc_timestamp(6))) THEN 1 ELSE 0 END AS within
FROM orders
WHERE orders.message_id IN (__[POSTCOMPILE_b_message_ids]);
