DELETE FROM orders
WHERE EXISTS (SELECT 1
    FROM OPENJSON(?) WITH (b_id BIGINT '$.b_id', b_version BIGINT '$.b_version', b_cid NVARCHAR(max) '$.b_cid') AS b
    WHERE orders.id = b.b_id
      AND orders.version = b.b_version
      AND orders.lease_owner = ?
      AND orders.correlation_id = b.b_cid
      AND (orders.status + '') = 'Leased');
