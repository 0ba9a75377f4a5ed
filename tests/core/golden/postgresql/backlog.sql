SELECT count(*) AS count_1, min(orders.process_after) AS min_1, now() AS now_1
FROM orders
WHERE orders.status IN ('Pending', 'Sleeping')
  AND orders.process_after <= now();
