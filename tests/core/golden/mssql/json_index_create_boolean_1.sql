CREATE INDEX tqx_orders_paid_b17838c0 ON orders (tqx_orders_paid_b17838c0);
