SELECT orders.id
FROM orders
WHERE CASE WHEN (json_type(orders.message, '$."Product"."Sku"') IN ('text')) THEN json_extract(orders.message, '$."Product"."Sku"') ELSE NULL END = ?
  AND coalesce(CASE WHEN (json_type(orders.message, ?) IN (__[POSTCOMPILE_json_type_1])) THEN json_extract(orders.message, ?) ELSE NULL END = ?, 0) = 1
  AND CASE WHEN (json_type(orders.message, '$."Items"[0]."unit price"') IN ('integer', 'real')) THEN json_extract(orders.message, '$."Items"[0]."unit price"') ELSE NULL END > ?
  AND coalesce(CASE WHEN (json_type(orders.message, ?) IN (__[POSTCOMPILE_json_type_2])) THEN json_extract(orders.message, ?) ELSE NULL END > ?, 0) = 1
  AND CASE WHEN (json_type(orders.message, '$."Paid"') = 'true') THEN 1 WHEN (json_type(orders.message, '$."Paid"') = 'false') THEN 0 END = ?
  AND coalesce(CASE WHEN (json_type(orders.message, ?) = ?) THEN ? WHEN (json_type(orders.message, ?) = ?) THEN ? END = ?, 0) = 1;
