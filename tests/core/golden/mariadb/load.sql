SELECT count(*) AS count_1
FROM orders
WHERE orders.status IN ('Pending', 'Sleeping') AND orders.process_after <= utc_timestamp(6) OR orders.status = 'Leased';
