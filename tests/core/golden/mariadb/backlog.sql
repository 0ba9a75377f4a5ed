SELECT count(*) AS count_1, min(orders.process_after) AS min_1, utc_timestamp(6) AS utc_timestamp_1
FROM orders
WHERE orders.status IN ('Pending', 'Sleeping')
  AND orders.process_after <= utc_timestamp(6);
