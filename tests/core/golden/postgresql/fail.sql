UPDATE orders
SET status=CASE WHEN b.b_give_up THEN 'Error' ELSE 'Sleeping' END,
    process_after=CASE WHEN b.b_give_up THEN orders.process_after ELSE now() + CAST(b.b_delay AS FLOAT) * interval '1 second' END,
    lease_expires_at=%(lease_expires_at)s::TIMESTAMP WITH TIME ZONE,
    last_error=b.b_error,
    updated_at=now()
FROM json_to_recordset(CAST(%(b_rows)s::VARCHAR AS JSON)) AS b(b_id BIGINT, b_version INTEGER, b_cid VARCHAR, b_error TEXT, b_give_up BOOLEAN, b_delay FLOAT)
WHERE orders.id = b.b_id
  AND orders.version = b.b_version
  AND orders.lease_owner = %(b_owner)s::VARCHAR
  AND orders.correlation_id = b.b_cid
  AND (orders.status || '') = 'Leased'
  AND orders.id = ANY (array((SELECT b_ids.b_id
      FROM json_to_recordset(CAST(%(b_rows)s::VARCHAR AS JSON)) AS b_ids(b_id BIGINT))));
