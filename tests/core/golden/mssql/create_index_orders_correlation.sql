CREATE INDEX orders_correlation ON orders (app_correlation_id, id)
WHERE app_correlation_id IS NOT NULL;
