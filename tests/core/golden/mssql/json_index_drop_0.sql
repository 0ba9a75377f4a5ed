DROP INDEX IF EXISTS tqx_orders_product_sku_7e90f0a2 ON orders;
