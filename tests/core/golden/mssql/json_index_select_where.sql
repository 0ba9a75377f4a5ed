SELECT orders.id
FROM orders
WHERE orders.tqx_orders_product_sku_7e90f0a2 = left(?, ?)
  AND CASE WHEN ((SELECT CASE WHEN (j.type = ?) THEN j.value COLLATE Latin1_General_100_BIN2_UTF8 ELSE NULL END AS anon_1
      FROM openjson(orders.message, ?) AS j
      WHERE j.[key] = ?) = ?) THEN ? ELSE ? END = ?
  AND orders.tqx_orders_items_0_unit_price_eaa6a792 > ?
  AND CASE WHEN ((SELECT CASE WHEN (j.type = ?) THEN CAST(j.value AS FLOAT) ELSE NULL END AS anon_2
      FROM openjson(orders.message, ?) AS j
      WHERE j.[key] = ?) > ?) THEN ? ELSE ? END = ?
  AND orders.tqx_orders_paid_b17838c0 = ?
  AND CASE WHEN ((SELECT CASE WHEN (j.type = ?) THEN CASE WHEN (j.value = ?) THEN ? ELSE ? END ELSE NULL END AS anon_3
      FROM openjson(orders.message, ?) AS j
      WHERE j.[key] = ?) = ?) THEN ? ELSE ? END = ?;
