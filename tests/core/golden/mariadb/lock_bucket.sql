SELECT tablequeue_rate_limits.messages_per_second, tablequeue_rate_limits.burst, tablequeue_rate_limits.theoretical_arrival, utc_timestamp(6) AS now
FROM tablequeue_rate_limits
WHERE tablequeue_rate_limits.queue = %(b_queue)s
FOR UPDATE;
