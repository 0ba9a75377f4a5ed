SELECT orders.id
FROM orders
WHERE orders.status IN ('Pending', 'Sleeping')
  AND orders.process_after <= utc_timestamp(6)
  AND (orders.expires_at IS NULL OR orders.expires_at > utc_timestamp(6))
LIMIT %(param_1)s;
