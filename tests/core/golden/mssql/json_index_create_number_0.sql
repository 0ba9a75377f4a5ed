ALTER TABLE orders ADD tqx_orders_items_0_unit_price_eaa6a792 AS (TRY_CAST(JSON_VALUE(message, N'$."Items"[0]."unit price"') AS FLOAT)) PERSISTED;
