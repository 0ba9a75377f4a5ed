SELECT orders.id, CAST(orders.message AS TEXT) AS message, CAST(orders.previous_message AS TEXT) AS previous_message, CAST(orders.headers AS TEXT) AS headers, CAST(orders.result AS TEXT) AS result, CAST(orders.progress AS TEXT) AS progress
FROM orders
WHERE orders.id > ?
  AND ((CAST(orders.message AS TEXT) LIKE '%' || ? || '%' ESCAPE '/') OR (CAST(orders.previous_message AS TEXT) LIKE '%' || ? || '%' ESCAPE '/') OR (CAST(orders.headers AS TEXT) LIKE '%' || ? || '%' ESCAPE '/') OR (CAST(orders.result AS TEXT) LIKE '%' || ? || '%' ESCAPE '/') OR (CAST(orders.progress AS TEXT) LIKE '%' || ? || '%' ESCAPE '/'))
ORDER BY orders.id
LIMIT ?
OFFSET ?;
