SELECT tablequeue_rate_limits.messages_per_second, tablequeue_rate_limits.burst, tablequeue_rate_limits.theoretical_arrival, sysutcdatetime() AS now
FROM tablequeue_rate_limits WITH (UPDLOCK, ROWLOCK)
WHERE tablequeue_rate_limits.queue = ?;
