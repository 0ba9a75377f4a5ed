SELECT count(*) AS count_1, min(orders.process_after) AS min_1, strftime('%Y-%m-%d %H:%M:%f', 'now') || '000' AS anon_1
FROM orders
WHERE orders.status IN ('Pending', 'Sleeping')
  AND orders.process_after <= (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000');
