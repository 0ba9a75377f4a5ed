INSERT INTO orders (message_id, status, priority, message, headers, version, attempts, process_after, expires_at, tracking_id, created_at, updated_at, app_correlation_id, label, group_key)
VALUES (?, (SELECT CASE WHEN (? = 1 AND coalesce(?, tablequeue_queues.default_status) = 'Pending') THEN 'Sleeping' ELSE coalesce(?, tablequeue_queues.default_status) END AS anon_1
    FROM tablequeue_queues
    WHERE tablequeue_queues.name = ?), ?, coalesce(?, 'null'), ?, 1, 0, coalesce(?, strftime('%Y-%m-%d %H:%M:%f', 'now', CAST(round(?, 3) AS TEXT) || ' seconds') || '000'), coalesce(?, strftime('%Y-%m-%d %H:%M:%f', 'now', CAST(round(?, 3) AS TEXT) || ' seconds') || '000'), ?, (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'), (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'), ?, ?, ?)
ON CONFLICT (message_id)
WHERE message_id IS NOT NULL
DO NOTHING
RETURNING id, message_id, tracking_id, version, status;
