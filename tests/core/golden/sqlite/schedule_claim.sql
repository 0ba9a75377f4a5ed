UPDATE tablequeue_schedules
SET next_tick=?,
    last_tick=?,
    last_fired_at=?,
    fired=(tablequeue_schedules.fired + ?),
    skipped=(tablequeue_schedules.skipped + ?),
    updated_at=?
WHERE tablequeue_schedules.queue = ?
  AND tablequeue_schedules.schedule = ?
  AND tablequeue_schedules.next_tick = ?
  AND tablequeue_schedules.cron = ?
  AND tablequeue_schedules.time_zone = ?;
