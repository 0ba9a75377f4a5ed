UPDATE orders
SET status='Pending',
    attempts=CASE WHEN (orders.attempts > %(attempts_1)s::INTEGER) THEN orders.attempts - %(attempts_2)s::INTEGER ELSE %(param_1)s::INTEGER END,
    lease_expires_at=%(lease_expires_at)s::TIMESTAMP WITH TIME ZONE,
    updated_at=now()
WHERE orders.id IN (__[POSTCOMPILE_b_ids])
  AND (orders.status || '') = 'Leased'
  AND orders.lease_owner = %(b_owner)s::VARCHAR;
