UPDATE tablequeue_rate_limits
SET theoretical_arrival=%(b_arrival)s,
    updated_at=now()
WHERE tablequeue_rate_limits.queue = %(b_queue)s::VARCHAR;
