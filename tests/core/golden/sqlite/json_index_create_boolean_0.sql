CREATE INDEX IF NOT EXISTS tqx_orders_paid_b17838c0 ON orders ((CASE WHEN (json_type(message, '$."Paid"') = 'true') THEN 1 WHEN (json_type(message, '$."Paid"') = 'false') THEN 0 END));
