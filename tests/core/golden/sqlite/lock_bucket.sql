SELECT tablequeue_rate_limits.messages_per_second, tablequeue_rate_limits.burst, tablequeue_rate_limits.theoretical_arrival, strftime('%Y-%m-%d %H:%M:%f', 'now') || '000' AS now
FROM tablequeue_rate_limits
WHERE tablequeue_rate_limits.queue = ?;
