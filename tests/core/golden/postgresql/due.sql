SELECT orders.id
FROM orders
WHERE orders.status IN ('Pending', 'Sleeping')
  AND orders.process_after <= now()
  AND (orders.expires_at IS NULL OR orders.expires_at > now())
LIMIT %(param_1)s::INTEGER;
