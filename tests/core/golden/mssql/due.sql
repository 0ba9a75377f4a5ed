SELECT TOP __[POSTCOMPILE_param_1] orders.id
FROM orders
WHERE orders.status IN ('Pending', 'Sleeping')
  AND orders.process_after <= sysutcdatetime()
  AND (orders.expires_at IS NULL OR orders.expires_at > sysutcdatetime());
