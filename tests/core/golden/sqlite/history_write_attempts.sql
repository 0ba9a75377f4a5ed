INSERT INTO tablequeue_attempts (queue, tracking_id, message_pk, attempt, kind, at, owner, correlation_id, error)
VALUES (?, ?, ?, ?, ?, (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'), ?, ?, ?);
