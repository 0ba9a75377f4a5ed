SELECT tablequeue_schedules.queue, tablequeue_schedules.schedule, tablequeue_schedules.cron, tablequeue_schedules.time_zone, tablequeue_schedules.next_tick, tablequeue_schedules.last_tick, tablequeue_schedules.last_fired_at, tablequeue_schedules.last_message, tablequeue_schedules.fired, tablequeue_schedules.skipped, tablequeue_schedules.updated_at
FROM tablequeue_schedules
WHERE tablequeue_schedules.queue = ?
  AND tablequeue_schedules.next_tick <= ?
ORDER BY tablequeue_schedules.schedule;
