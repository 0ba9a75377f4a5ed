UPDATE orders
SET message=?
WHERE orders.id = ?
  AND orders.message = ?;
