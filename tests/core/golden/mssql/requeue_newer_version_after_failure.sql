UPDATE orders
SET status=CASE WHEN (orders.process_after > sysutcdatetime()) THEN 'Sleeping' ELSE ? END,
    attempts=?,
    lease_expires_at=?,
    updated_at=sysutcdatetime()
FROM orders, OPENJSON(?) WITH (b_id BIGINT '$.b_id', b_version BIGINT '$.b_version', b_cid NVARCHAR(max) '$.b_cid', b_previous NVARCHAR(max) '$.b_previous') AS b
WHERE orders.id = b.b_id
  AND orders.version != b.b_version
  AND orders.lease_owner = ?
  AND orders.correlation_id = b.b_cid
  AND (orders.status + '') = 'Leased';
