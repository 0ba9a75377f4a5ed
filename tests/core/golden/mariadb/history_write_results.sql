INSERT INTO tablequeue_results (tracking_id, queue, message_pk, message_id, status, result, last_error, attempts, processed_at)
VALUES (%(r_tracking_id)s, %(r_queue)s, %(r_message_pk)s, %(r_message_id)s, %(r_status)s, %(r_result)s, %(r_last_error)s, %(r_attempts)s, utc_timestamp(6))
ON DUPLICATE KEY UPDATE queue = VALUES(queue),
    message_pk = VALUES(message_pk),
    message_id = VALUES(message_id),
    status = VALUES(status),
    result = VALUES(result),
    last_error = VALUES(last_error),
    attempts = VALUES(attempts),
    processed_at = VALUES(processed_at);
