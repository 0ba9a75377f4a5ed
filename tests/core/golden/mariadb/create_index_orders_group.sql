CREATE INDEX orders_group ON orders (group_key, status, id);
