SELECT orders.id, orders.message_id, orders.tracking_id, orders.version, orders.status, CASE WHEN (orders.created_at > dateadd(day, CAST((-?) / (86400e0 + 0.0) AS INTEGER), dateadd(second, CAST(-? - CAST((-?) / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER), dateadd(microsecond, CAST(round(((-? - CAST((-?) / (86400e0 + 0.0) AS INTEGER) * 86400e0) - CAST(-? - CAST((-?) / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER)) * 1000000, 0) AS INTEGER), sysutcdatetime())))) THEN 1 ELSE 0 END AS within
FROM orders
WHERE orders.message_id IN (__[POSTCOMPILE_b_message_ids]);
