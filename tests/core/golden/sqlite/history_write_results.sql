INSERT INTO tablequeue_results (tracking_id, queue, message_pk, message_id, status, result, last_error, attempts, processed_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'))
ON CONFLICT (tracking_id)
DO UPDATE
SET queue = excluded.queue,
    message_pk = excluded.message_pk,
    message_id = excluded.message_id,
    status = excluded.status,
    result = excluded.result,
    last_error = excluded.last_error,
    attempts = excluded.attempts,
    processed_at = excluded.processed_at;
