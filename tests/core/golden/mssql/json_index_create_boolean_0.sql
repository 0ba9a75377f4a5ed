ALTER TABLE orders ADD tqx_orders_paid_b17838c0 AS (CAST(CASE JSON_VALUE(message, N'$."Paid"') WHEN 'true' THEN 1 WHEN 'false' THEN 0 END AS BIT)) PERSISTED;
