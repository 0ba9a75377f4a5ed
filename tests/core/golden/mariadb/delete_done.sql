DELETE FROM orders
USING json_table(%(b_rows)s, '$[*]' COLUMNS (b_id BIGINT PATH '$.b_id', b_version BIGINT PATH '$.b_version', b_cid LONGTEXT PATH '$.b_cid')) AS b
STRAIGHT_JOIN orders
WHERE orders.id = b.b_id
  AND orders.version = b.b_version
  AND orders.lease_owner = %(b_owner)s
  AND orders.correlation_id = b.b_cid
  AND (concat(orders.status, '')) = 'Leased';
