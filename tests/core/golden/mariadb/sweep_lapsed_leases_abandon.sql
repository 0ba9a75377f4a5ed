SELECT CASE WHEN (orders.attempts = %(attempts_1)s) THEN 'Pending' ELSE 'Abandoned' END AS status, orders.id, orders.tracking_id, orders.lease_owner, orders.correlation_id, orders.attempts
FROM orders
WHERE orders.status = 'Leased'
  AND orders.lease_expires_at < utc_timestamp(6)
FOR UPDATE SKIP LOCKED;
