UPDATE json_table(%(b_rows)s, '$[*]' COLUMNS (b_id BIGINT PATH '$.b_id', b_version BIGINT PATH '$.b_version', b_cid LONGTEXT PATH '$.b_cid', b_again DATETIME(6) PATH '$.b_again', b_result JSON PATH '$.b_result', b_progress JSON PATH '$.b_progress')) AS b
STRAIGHT_JOIN orders
SET orders.status='Processed',
    orders.previous_message=CASE WHEN (orders.message_id IS NOT NULL) THEN orders.message ELSE orders.previous_message END,
    orders.lease_expires_at=%(lease_expires_at)s,
    orders.result=b.b_result,
    orders.progress=coalesce(b.b_progress, orders.progress),
    orders.updated_at=utc_timestamp(6),
    orders.processed_at=utc_timestamp(6)
WHERE orders.id = b.b_id
  AND orders.version = b.b_version
  AND orders.lease_owner = %(b_owner)s
  AND orders.correlation_id = b.b_cid
  AND (concat(orders.status, '')) = 'Leased';
