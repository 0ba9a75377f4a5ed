UPDATE json_table(%(b_rows)s, '$[*]' COLUMNS (b_id BIGINT PATH '$.b_id', b_version BIGINT PATH '$.b_version', b_cid LONGTEXT PATH '$.b_cid', b_error LONGTEXT PATH '$.b_error', b_give_up BOOLEAN PATH '$.b_give_up', b_delay DOUBLE PATH '$.b_delay')) AS b
STRAIGHT_JOIN orders
SET orders.status=CASE WHEN b.b_give_up THEN 'Error' ELSE 'Sleeping' END,
    orders.process_after=CASE WHEN b.b_give_up THEN orders.process_after ELSE timestampadd(MICROSECOND, CAST(round(b.b_delay * 1000000) AS SIGNED INTEGER), utc_timestamp(6)) END,
    orders.lease_expires_at=%(lease_expires_at)s,
    orders.last_error=b.b_error,
    orders.updated_at=utc_timestamp(6)
WHERE orders.id = b.b_id
  AND orders.version = b.b_version
  AND orders.lease_owner = %(b_owner)s
  AND orders.correlation_id = b.b_cid
  AND (concat(orders.status, '')) = 'Leased';
