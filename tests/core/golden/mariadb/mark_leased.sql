UPDATE orders
SET status='Leased',
    attempts=(orders.attempts + %(attempts_1)s),
    lease_expires_at=%(b_expires)s,
    lease_owner=%(b_owner)s,
    correlation_id=%(b_cid)s,
    updated_at=%(b_now)s,
    started_at=%(b_now)s
WHERE orders.id IN (__[POSTCOMPILE_b_ids]);
