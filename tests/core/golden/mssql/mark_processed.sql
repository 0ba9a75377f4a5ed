UPDATE orders
SET status='Processed',
    previous_message=CASE WHEN (orders.message_id IS NOT NULL) THEN orders.message ELSE orders.previous_message END,
    lease_expires_at=?,
    result=b.b_result,
    progress=coalesce(b.b_progress, orders.progress),
    updated_at=sysutcdatetime(),
    processed_at=sysutcdatetime()
FROM orders, OPENJSON(?) WITH (b_id BIGINT '$.b_id', b_version BIGINT '$.b_version', b_cid NVARCHAR(max) '$.b_cid', b_again DATETIME2(6) '$.b_again', b_result NVARCHAR(max) '$.b_result', b_progress NVARCHAR(max) '$.b_progress') AS b
WHERE orders.id = b.b_id
  AND orders.version = b.b_version
  AND orders.lease_owner = ?
  AND orders.correlation_id = b.b_cid
  AND (orders.status + '') = 'Leased';
