UPDATE orders
SET message=?
WHERE orders.message_id = ?
  AND CAST(orders.message AS TEXT) = ?;
