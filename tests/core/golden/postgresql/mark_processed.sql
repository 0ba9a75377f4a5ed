UPDATE orders
SET status='Processed',
    previous_message=CASE WHEN (orders.message_id IS NOT NULL) THEN orders.message ELSE orders.previous_message END,
    lease_expires_at=%(lease_expires_at)s::TIMESTAMP WITH TIME ZONE,
    result=b.b_result,
    progress=coalesce(b.b_progress, orders.progress),
    updated_at=now(),
    processed_at=now()
FROM json_to_recordset(CAST(%(b_rows)s::VARCHAR AS JSON)) AS b(b_id BIGINT, b_version INTEGER, b_cid VARCHAR, b_again TIMESTAMP WITH TIME ZONE, b_result JSONB, b_progress JSONB)
WHERE orders.id = b.b_id
  AND orders.version = b.b_version
  AND orders.lease_owner = %(b_owner)s::VARCHAR
  AND orders.correlation_id = b.b_cid
  AND (orders.status || '') = 'Leased'
  AND orders.id = ANY (array((SELECT b_ids.b_id
      FROM json_to_recordset(CAST(%(b_rows)s::VARCHAR AS JSON)) AS b_ids(b_id BIGINT))));
