SELECT count(*) AS count_1, min(orders.process_after) AS min_1, sysutcdatetime() AS sysutcdatetime_1
FROM orders
WHERE orders.status IN ('Pending', 'Sleeping')
  AND orders.process_after <= sysutcdatetime();
