UPDATE orders
SET status=CASE WHEN (orders.attempts >= %(attempts_1)s::INTEGER AND orders.attempts != %(attempts_2)s::INTEGER) THEN 'Error' ELSE 'Pending' END,
    lease_expires_at=%(lease_expires_at)s::TIMESTAMP WITH TIME ZONE,
    last_error=(%(param_1)s::VARCHAR || coalesce(orders.lease_owner, %(coalesce_1)s::VARCHAR) || %(param_2)s::VARCHAR || coalesce(orders.correlation_id, %(coalesce_2)s::VARCHAR)),
    updated_at=now()
WHERE orders.status = 'Leased'
  AND orders.lease_expires_at < now()
RETURNING orders.status, orders.id, orders.tracking_id, orders.lease_owner, orders.correlation_id, orders.attempts;
