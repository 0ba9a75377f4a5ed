CREATE UNIQUE INDEX orders_message_id ON orders (message_id)
WHERE message_id IS NOT NULL;
