UPDATE orders
SET message=%(b_new)s
WHERE orders.id = %(b_id)s
  AND CAST(orders.message AS CHAR) = %(b_old)s;
