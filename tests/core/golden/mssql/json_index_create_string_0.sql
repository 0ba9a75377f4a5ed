ALTER TABLE orders ADD tqx_orders_product_sku_7e90f0a2 AS (CAST(LEFT(JSON_VALUE(message, N'$."Product"."Sku"'), 450) AS NVARCHAR(450))) PERSISTED;
