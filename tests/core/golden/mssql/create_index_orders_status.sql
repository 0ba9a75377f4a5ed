CREATE INDEX orders_status ON orders (status, id);
