UPDATE orders
SET status=CASE WHEN (orders.attempts = %(attempts_1)s) THEN 'Pending' ELSE 'Abandoned' END,
    lease_expires_at=%(lease_expires_at)s,
    last_error=(concat(%(param_1)s, coalesce(orders.lease_owner, %(coalesce_1)s), %(param_2)s, coalesce(orders.correlation_id, %(coalesce_2)s))),
    updated_at=utc_timestamp(6)
WHERE orders.id IN (__[POSTCOMPILE_b_ids]);
