SELECT tablequeue_queues.paused_at, tablequeue_queues.max_leased
FROM tablequeue_queues
WHERE tablequeue_queues.name = ?;
