UPDATE json_table(%(b_rows)s, '$[*]' COLUMNS (b_message_id VARCHAR(400) PATH '$.b_message_id', b_old LONGTEXT PATH '$.b_old', b_new JSON PATH '$.b_new')) AS b
STRAIGHT_JOIN orders
SET orders.message=b.b_new
WHERE orders.message_id = b.b_message_id
  AND CAST(orders.message AS CHAR) = b.b_old;
