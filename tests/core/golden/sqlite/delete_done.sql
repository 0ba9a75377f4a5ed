DELETE FROM orders
WHERE orders.id = ?
  AND orders.version = ?
  AND orders.lease_owner = ?
  AND orders.correlation_id = ?
  AND (orders.status || '') = 'Leased';
