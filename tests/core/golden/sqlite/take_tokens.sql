UPDATE tablequeue_rate_limits
SET theoretical_arrival=?,
    updated_at=(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
WHERE tablequeue_rate_limits.queue = ?;
