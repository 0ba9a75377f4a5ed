UPDATE json_table(%(b_rows)s, '$[*]' COLUMNS (b_id BIGINT PATH '$.b_id', b_version BIGINT PATH '$.b_version', b_cid LONGTEXT PATH '$.b_cid', b_previous JSON PATH '$.b_previous')) AS b
STRAIGHT_JOIN orders
SET orders.status=%(status)s,
    orders.previous_message=CASE WHEN (orders.message_id IS NOT NULL) THEN b.b_previous ELSE orders.previous_message END,
    orders.attempts=%(attempts)s,
    orders.lease_expires_at=%(lease_expires_at)s,
    orders.updated_at=utc_timestamp(6)
WHERE orders.id = b.b_id
  AND orders.version != b.b_version
  AND orders.lease_owner = %(b_owner)s
  AND orders.correlation_id = b.b_cid
  AND (concat(orders.status, '')) = 'Leased';
