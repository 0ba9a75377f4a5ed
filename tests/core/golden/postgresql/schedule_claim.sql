UPDATE tablequeue_schedules
SET next_tick=%(next_tick)s::TIMESTAMP WITH TIME ZONE,
    last_tick=%(last_tick)s::TIMESTAMP WITH TIME ZONE,
    last_fired_at=%(last_fired_at)s::TIMESTAMP WITH TIME ZONE,
    fired=(tablequeue_schedules.fired + %(fired_1)s::INTEGER),
    skipped=(tablequeue_schedules.skipped + %(skipped_1)s::INTEGER),
    updated_at=%(updated_at)s::TIMESTAMP WITH TIME ZONE
WHERE tablequeue_schedules.queue = %(queue_1)s::VARCHAR
  AND tablequeue_schedules.schedule = %(schedule_1)s::VARCHAR
  AND tablequeue_schedules.next_tick = %(next_tick_1)s::TIMESTAMP WITH TIME ZONE
  AND tablequeue_schedules.cron = %(cron_1)s::VARCHAR
  AND tablequeue_schedules.time_zone = %(time_zone_1)s::VARCHAR;
