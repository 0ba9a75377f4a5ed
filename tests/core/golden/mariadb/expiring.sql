SELECT orders.id
FROM orders
WHERE orders.status IN ('Pending', 'Sleeping')
  AND orders.expires_at <= utc_timestamp(6)
LIMIT %(b_n)s;
