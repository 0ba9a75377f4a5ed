CREATE INDEX orders_correlation ON orders (app_correlation_id, id);
