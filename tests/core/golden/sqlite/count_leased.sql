SELECT count(*) AS count_1
FROM orders
WHERE orders.status = 'Leased';
