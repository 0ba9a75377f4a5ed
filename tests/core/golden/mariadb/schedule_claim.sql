UPDATE tablequeue_schedules
SET next_tick=%(next_tick)s,
    last_tick=%(last_tick)s,
    last_fired_at=%(last_fired_at)s,
    fired=(tablequeue_schedules.fired + %(fired_1)s),
    skipped=(tablequeue_schedules.skipped + %(skipped_1)s),
    updated_at=%(updated_at)s
WHERE tablequeue_schedules.queue = %(queue_1)s
  AND tablequeue_schedules.schedule = %(schedule_1)s
  AND tablequeue_schedules.next_tick = %(next_tick_1)s
  AND tablequeue_schedules.cron = %(cron_1)s
  AND tablequeue_schedules.time_zone = %(time_zone_1)s;
