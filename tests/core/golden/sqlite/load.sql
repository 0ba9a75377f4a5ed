SELECT count(*) AS count_1
FROM orders
WHERE orders.status IN ('Pending', 'Sleeping') AND orders.process_after <= (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000') OR orders.status = 'Leased';
