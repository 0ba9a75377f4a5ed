UPDATE orders
SET status='Pending',
    attempts=CASE WHEN (orders.attempts > %(attempts_1)s) THEN orders.attempts - %(attempts_2)s ELSE %(param_1)s END,
    lease_expires_at=%(lease_expires_at)s,
    updated_at=utc_timestamp(6)
WHERE orders.id IN (__[POSTCOMPILE_b_ids])
  AND (concat(orders.status, '')) = 'Leased'
  AND orders.lease_owner = %(b_owner)s;
