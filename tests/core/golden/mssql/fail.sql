UPDATE orders
SET status=CASE WHEN (b.b_give_up = 1) THEN 'Error' ELSE 'Sleeping' END,
    process_after=CASE WHEN (b.b_give_up = 1) THEN orders.process_after ELSE dateadd(day, CAST(b.b_delay / (86400e0 + 0.0) AS INTEGER), dateadd(second, CAST(b.b_delay - CAST(b.b_delay / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER), dateadd(microsecond, CAST(round(((b.b_delay - CAST(b.b_delay / (86400e0 + 0.0) AS INTEGER) * 86400e0) - CAST(b.b_delay - CAST(b.b_delay / (86400e0 + 0.0) AS INTEGER) * 86400e0 AS INTEGER)) * 1000000, 0) AS INTEGER), sysutcdatetime()))) END,
    lease_expires_at=?,
    last_error=b.b_error,
    updated_at=sysutcdatetime()
FROM orders, OPENJSON(?) WITH (b_id BIGINT '$.b_id', b_version BIGINT '$.b_version', b_cid NVARCHAR(max) '$.b_cid', b_error NVARCHAR(max) '$.b_error', b_give_up BIT '$.b_give_up', b_delay FLOAT '$.b_delay') AS b
WHERE orders.id = b.b_id
  AND orders.version = b.b_version
  AND orders.lease_owner = ?
  AND orders.correlation_id = b.b_cid
  AND (orders.status + '') = 'Leased';
