CREATE INDEX orders_lease ON orders (status, priority DESC, process_after, id);
