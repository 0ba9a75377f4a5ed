SELECT orders.status, count(*) AS count_1
FROM orders
GROUP BY orders.status;
