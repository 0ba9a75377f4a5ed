SELECT TOP __[POSTCOMPILE_param_1] orders.id, orders.message AS message, orders.previous_message AS previous_message, orders.headers AS headers, orders.result AS result, orders.progress AS progress
FROM orders
WHERE orders.id > ?
  AND ((orders.message LIKE '%' + ? + '%' ESCAPE '/') OR (orders.previous_message LIKE '%' + ? + '%' ESCAPE '/') OR (orders.headers LIKE '%' + ? + '%' ESCAPE '/') OR (orders.result LIKE '%' + ? + '%' ESCAPE '/') OR (orders.progress LIKE '%' + ? + '%' ESCAPE '/'))
ORDER BY orders.id;
