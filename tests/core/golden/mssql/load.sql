SELECT count(*) AS count_1
FROM orders
WHERE orders.status IN ('Pending', 'Sleeping') AND orders.process_after <= sysutcdatetime() OR orders.status = 'Leased';
