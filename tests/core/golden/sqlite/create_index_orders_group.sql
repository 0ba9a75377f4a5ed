CREATE INDEX orders_group ON orders (group_key, status, id)
WHERE group_key IS NOT NULL
  AND status IN ('Pending', 'Sleeping', 'Leased', 'Error', 'Abandoned');
