SELECT orders.id
FROM orders
WHERE orders.tqx_orders_product_sku_7e90f0a2 = left(CAST(%(param_1)s AS BINARY), 3072)
  AND coalesce(CASE WHEN (json_type(json_extract(orders.message, %(param_2)s)) IN (__[POSTCOMPILE_json_type_1])) THEN CAST(json_unquote(json_extract(orders.message, %(param_2)s)) AS BINARY) ELSE NULL END = %(param_3)s, false) = 1
  AND orders.tqx_orders_items_0_unit_price_eaa6a792 > %(param_4)s
  AND coalesce(CASE WHEN (json_type(json_extract(orders.message, %(param_5)s)) IN (__[POSTCOMPILE_json_type_2]) AND coalesce(json_type(json_extract(orders.message, %(param_6)s)), %(coalesce_1)s) = %(coalesce_2)s) THEN json_extract(orders.message, %(param_5)s) + 0e0 ELSE NULL END > %(param_7)s, false) = 1
  AND orders.tqx_orders_paid_b17838c0 = %(param_8)s
  AND coalesce(CASE WHEN (json_type(json_extract(orders.message, %(param_9)s)) IN (__[POSTCOMPILE_json_type_3])) THEN json_extract(orders.message, %(param_9)s) = 'true' ELSE NULL END = %(param_10)s, false) = 1;
