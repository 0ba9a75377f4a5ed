UPDATE tablequeue_rate_limits
SET theoretical_arrival=?,
    updated_at=sysutcdatetime()
WHERE tablequeue_rate_limits.queue = ?;
