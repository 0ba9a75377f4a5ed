CREATE INDEX tablequeue_workers_queue ON tablequeue_workers (queue);
