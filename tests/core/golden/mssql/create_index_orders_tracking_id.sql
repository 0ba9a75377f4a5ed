CREATE UNIQUE INDEX orders_tracking_id ON orders (tracking_id);
