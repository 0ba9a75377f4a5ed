SELECT tablequeue_queues.paused_at, tablequeue_queues.max_leased
FROM tablequeue_queues WITH (UPDLOCK, ROWLOCK)
WHERE tablequeue_queues.name = ?;
