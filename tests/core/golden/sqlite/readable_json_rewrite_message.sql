UPDATE orders
SET message=?
WHERE orders.id = ?
  AND CAST(orders.message AS TEXT) = ?;
