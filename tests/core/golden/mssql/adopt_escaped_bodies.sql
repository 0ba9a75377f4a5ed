UPDATE orders
SET message=b.b_new
FROM orders, OPENJSON(?) WITH (b_message_id NVARCHAR(400) '$.b_message_id', b_old NVARCHAR(max) '$.b_old', b_new NVARCHAR(max) '$.b_new') AS b
WHERE orders.message_id = b.b_message_id
  AND orders.message = b.b_old;
