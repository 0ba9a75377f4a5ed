CREATE INDEX IF NOT EXISTS tqx_orders_product_sku_7e90f0a2 ON orders ((CASE WHEN (json_type(message, '$."Product"."Sku"') IN ('text')) THEN json_extract(message, '$."Product"."Sku"') ELSE NULL END));
