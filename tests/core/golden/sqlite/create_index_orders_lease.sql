CREATE INDEX orders_lease ON orders (priority DESC, process_after, id)
WHERE status IN ('Pending', 'Sleeping');
