SELECT orders.id, CAST(orders.message AS CHAR) AS message, CAST(orders.previous_message AS CHAR) AS previous_message, CAST(orders.headers AS CHAR) AS headers, CAST(orders.result AS CHAR) AS result, CAST(orders.progress AS CHAR) AS progress
FROM orders
WHERE orders.id > %(b_after)s
  AND ((CAST(orders.message AS CHAR) LIKE concat('%%', %(param_1)s, '%%') ESCAPE '/') OR (CAST(orders.previous_message AS CHAR) LIKE concat('%%', %(param_2)s, '%%') ESCAPE '/') OR (CAST(orders.headers AS CHAR) LIKE concat('%%', %(param_3)s, '%%') ESCAPE '/') OR (CAST(orders.result AS CHAR) LIKE concat('%%', %(param_4)s, '%%') ESCAPE '/') OR (CAST(orders.progress AS CHAR) LIKE concat('%%', %(param_5)s, '%%') ESCAPE '/'))
ORDER BY orders.id
LIMIT %(param_6)s;
