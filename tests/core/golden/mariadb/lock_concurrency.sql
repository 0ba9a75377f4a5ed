SELECT tablequeue_queues.paused_at, tablequeue_queues.max_leased, tablequeue_queues.group_limit, tablequeue_queues.group_hold
FROM tablequeue_queues
WHERE tablequeue_queues.name = %(b_queue)s
FOR UPDATE;
