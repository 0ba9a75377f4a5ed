UPDATE orders
SET status=%(status)s::VARCHAR,
    previous_message=CASE WHEN (orders.message_id IS NOT NULL) THEN b.b_previous ELSE orders.previous_message END,
    attempts=%(attempts)s::INTEGER,
    lease_expires_at=%(lease_expires_at)s::TIMESTAMP WITH TIME ZONE,
    updated_at=now()
FROM json_to_recordset(CAST(%(b_rows)s::VARCHAR AS JSON)) AS b(b_id BIGINT, b_version INTEGER, b_cid VARCHAR, b_previous JSONB)
WHERE orders.id = b.b_id
  AND orders.version != b.b_version
  AND orders.lease_owner = %(b_owner)s::VARCHAR
  AND orders.correlation_id = b.b_cid
  AND (orders.status || '') = 'Leased'
  AND orders.id = ANY (array((SELECT b_ids.b_id
      FROM json_to_recordset(CAST(%(b_rows)s::VARCHAR AS JSON)) AS b_ids(b_id BIGINT))));
