UPDATE tablequeue_rate_limits
SET theoretical_arrival=%(b_arrival)s,
    updated_at=utc_timestamp(6)
WHERE tablequeue_rate_limits.queue = %(b_queue)s;
